// Probe events through histd's tree. kprobe_events and uprobe_events, and
// dynamic_events' p:/r: lines, are the kernel's, read and written through
// under the engine's lock (no program is built from a format that changes
// under it). Eprobes (e:) are histd's own: the registry holds them, the
// deployer runs each at the tracepoint of the event it is attached to,
// the state file keeps them.
#include <fmt/format.h>

#include "histd/engine.h"

namespace histd::engine {

namespace {

constexpr const char* kLocation = "event_probe";  // as the kernel's error_log names eprobe errors

}  // namespace

bool Engine::own_probe_line(std::string_view line) const {
  auto parsed = registry::ProbeWrite::parse(line);
  if (!parsed) return parsed.error().code != ErrorCode::UnknownCommand && parsed.error().code != ErrorCode::EmptyCommand;
  if (std::holds_alternative<probe::Define>(parsed->command.what)) return true;
  // A removal is histd's when it names one of histd's (else: the kernel's probes).
  const auto& rm = std::get<probe::Remove>(parsed->command.what);
  for (const auto& [id, e] : registry_.eprobes())
    if (id.name == rm.event && (rm.group.empty() || id.system == rm.group)) return true;
  return false;
}

std::string Engine::probe_events(const std::string& file) {
  std::lock_guard lock(mu_);
  std::string kernel = deployer_->probe_events(file);
  if (file != "dynamic_events") return kernel;
  for (const auto& [id, e] : registry_.eprobes()) kernel += probe::list_line(e.def) + "\n";
  return kernel;
}

CommandResult Engine::write_probe_events(const std::string& file, std::string_view text, bool truncate) {
  std::lock_guard lock(mu_);
  if (file == "dynamic_events" && !truncate && own_probe_line(text)) return write_own_probes(text, false);
  auto st = deployer_->write_probe_events(file, text, truncate);
  if (st) return Unit{};
  const std::string_view command = truncate && text.empty() ? std::string_view("(truncate)") : text;
  return finish_command(file, command, nullptr, system_failure(std::move(st).error()));
}

CommandResult Engine::write_own_probes(std::string_view text, bool truncate) {
  if (auto room = reserve_state(text.size()); !room)
    return finish_command(kLocation, text, nullptr, system_failure(std::move(room).error()));
  CommandResult r = truncate ? run(registry::ProbeTruncate{}, nullptr, kLocation, "(truncate)") : CommandResult(Unit{});
  if (r) r = apply_own_probes(text);
  // The lines before a failing one stay applied, as in the kernel: the
  // state is saved either way.
  if (r) return finish_command(kLocation, text, nullptr, std::move(r));
  (void)finish_command(kLocation, text, nullptr, Unit{});
  return finish_command(kLocation, text, nullptr, std::move(r));
}

CommandResult Engine::apply_own_probes(std::string_view text) {
  // One command per line; the first failing line stops.
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    auto parsed = registry::ProbeWrite::parse(line);
    if (!parsed) {
      if (parsed.error().code == ErrorCode::EmptyCommand) continue;
      log_error(kLocation, parsed.error());
      return unexpected(CommandFailure{std::move(parsed).error(), Error{ErrorKind::Invalid, EINVAL, {}}});
    }
    const std::string logged = parsed->command.command;
    CommandResult r = run(*parsed, nullptr, kLocation, logged);
    if (!r) return r;
  }
  return Unit{};
}

}  // namespace histd::engine
