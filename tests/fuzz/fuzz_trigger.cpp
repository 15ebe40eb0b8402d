// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: any bytes as a trigger-file write, through parse ->
// plan -> codegen against kmem:kmalloc and sched:sched_switch fixtures.
// Nothing may crash, carets stay inside the command, and the generated C does
// not depend on the table name.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "histd/codegen.h"
#include "histd/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto formats = histd::fuzz::fixture_formats();
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const auto& format : formats) {
    auto compiled = histd::pipeline::compile(text, *format);
    if (!compiled) {
      const auto& d = compiled.error();
      if (d.span.begin > d.command.size() + 1) __builtin_trap();  // a caret outside the command
      continue;
    }
    if (compiled->command.name) {
      // Generated code must not depend on names the user wrote: the same
      // command with the table renamed compiles to the same C.
      histd::parse::HistCommand renamed = compiled->command;
      renamed.name = "n";
      auto plan = histd::plan::plan_hist(renamed, *format);
      if (!plan) __builtin_trap();
      histd::codegen::EventEntry entry;
      entry.chained = histd::pipeline::chained_entry(*format);
      entry.test_entry = histd::pipeline::injected_only(format->source);
      const histd::codegen::GeneratedUnit unit = histd::codegen::generate_event_unit({{&*plan, 0}}, {}, {}, entry);
      if (unit.source != compiled->unit.source || unit.constants != compiled->unit.constants) __builtin_trap();
    }
    (void)compiled->plan.trigger_text();
    (void)histd::plan::describe(compiled->plan);
    (void)histd::plan::debug_fields(compiled->plan);
  }
  return 0;
}
