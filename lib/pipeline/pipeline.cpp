// SPDX-License-Identifier: GPL-2.0-only
#include "histd/pipeline.h"

namespace histd::pipeline {

Result<plan::HistPlan, Diagnostic> plan_command(const parse::HistCommand& command, const catalog::EventFormat& format,
                                                const plan::PlanContext& registry) {
  return plan::plan_hist(command, format, registry);
}

Result<Planned, Diagnostic> plan_command(std::string_view text, const catalog::EventFormat& format,
                                         const plan::PlanContext& registry, size_t max_bytes) {
  auto parsed = parse::parse_trigger(text, max_bytes);
  if (!parsed) return unexpected(std::move(parsed).error());
  auto* hist = std::get_if<parse::HistCommand>(&*parsed);
  if (!hist) {
    const auto& e = std::get<parse::ControlCommand>(*parsed);
    return unexpected(Diagnostic{ErrorCode::Unsupported, Span{0, 0}, e.command, "only hist commands have a plan"});
  }
  parse::HistCommand command = std::move(*hist);
  auto planned = plan_command(command, format, registry);
  if (!planned) return unexpected(std::move(planned).error());
  return Planned{std::move(command), std::move(*planned)};
}

bool chained_entry(catalog::EventSource source) { return catalog::source_traits(source).kernel_tracepoint; }

bool injected_only(catalog::EventSource source) { return catalog::source_traits(source).injected; }

Result<Compiled, Diagnostic> compile(std::string_view text, const catalog::EventFormat& format,
                                     CompileOptions options) {
  auto planned = plan_command(text, format);
  if (!planned) return unexpected(std::move(planned).error());
  // As the engine builds it: no synthetic events are known offline, so none
  // is inlined, and no chain can be too deep.
  EventParts parts;
  parts.own.hist.push_back({&planned->plan, 0});
  parts.syscall = syscall_entry(format, options.raw_syscalls);
  parts.btf = btf_entry(format, options.btf_tracepoints);
  auto unit = event_unit(parts);
  if (!unit) return unexpected(Diagnostic{ErrorCode::Unsupported, Span{0, 0}, std::string(text), unit.error().context});
  unit->entry.chained = chained_entry(format);
  unit->entry.test_entry = injected_only(format.source);
  unit->entry.pids = pid_check(format);
  // Generated before the plan it points into is moved.
  codegen::GeneratedUnit generated = compile_event(*unit);
  return Compiled{std::move(planned->command), std::move(planned->plan), std::move(generated)};
}

}  // namespace histd::pipeline
