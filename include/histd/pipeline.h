// The one place that fixes the stage order: parse -> plan -> codegen.
// histd's engine, `histctl check`/`explain` and the tests all call it.
#pragma once

#include <string>
#include <string_view>

#include "histd/catalog.h"
#include "histd/diagnostic.h"
#include "histd/plan.h"
#include "histd/result.h"
#include "histd/parse.h"

namespace histd::pipeline {

struct Planned {
  parse::HistCommand command;
  plan::HistPlan plan;
};

struct Compiled {
  parse::HistCommand command;
  plan::HistPlan plan;
  std::string source;  // the BPF C unit of this trigger alone
};

// plan, for a command parsed once at the front door (the engine).
Result<plan::HistPlan, Diagnostic> plan_command(const parse::HistCommand& command,
                                                const catalog::EventFormat& format,
                                                const plan::Registry& registry = {});

// parse -> plan, for front ends that hold only text (histctl check, tests);
// `max_bytes` as parse::parse_trigger.
Result<Planned, Diagnostic> plan_command(std::string_view text, const catalog::EventFormat& format,
                                         const plan::Registry& registry = {},
                                         size_t max_bytes = parse::kMaxCommandBytes);

// parse -> plan -> codegen (control slot 0), for offline checks and explain.
Result<Compiled, Diagnostic> compile(std::string_view text, const catalog::EventFormat& format);

}  // namespace histd::pipeline
