// SPDX-License-Identifier: GPL-2.0-only
// Probe events through histd's tree. kprobe_events and uprobe_events, and
// dynamic_events' p:/r: lines, are the kernel's, read and written through
// under the engine's lock (no program is built from a format that changes
// under it). Eprobes (e:) are histd's own: the registry holds them, the
// deployer runs each at the tracepoint of the event it is attached to,
// the state file keeps them.
#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

constexpr const char* kLocation = "event_probe";  // as the kernel's error_log names eprobe errors

}  // namespace

std::optional<Result<registry::ProbeWrite, Diagnostic>> Commands::own_probe(std::string_view line) const {
  auto parsed = registry::ProbeWrite::parse(line);
  if (!parsed) {
    const ErrorCode code = parsed.error().code;
    if (code == ErrorCode::UnknownCommand || code == ErrorCode::EmptyCommand) return std::nullopt;
    return parsed;
  }
  if (std::holds_alternative<probe::Define>(parsed->command.what)) return parsed;
  // A removal is histd's when it names one of histd's (else: the kernel's probes).
  const auto& rm = std::get<probe::Remove>(parsed->command.what);
  for (const auto& [id, e] : registry_.eprobes())
    if (id.name == rm.event && (rm.group.empty() || id.system == rm.group)) return parsed;
  return std::nullopt;
}

CommandResult Engine::write_probe_events(const std::string& file, std::string_view text, bool truncate) {
  std::lock_guard lock(mu_);
  return commands_->write_probe_events(file, text, truncate);
}

CommandResult Commands::write_probe_events(const std::string& file, std::string_view text, bool truncate) {
  if (file == "dynamic_events" && !truncate)
    if (auto own = own_probe(text)) return write_own_probe(text, std::move(*own));
  auto st = deployer_.probe_files().write_probe_events(file, text, truncate);
  if (st) return Unit{};
  const std::string_view command = truncate && text.empty() ? std::string_view("(truncate)") : text;
  return finish_command(file, command, nullptr, system_failure(std::move(st).error()));
}

CommandResult Commands::write_own_probe(std::string_view line, Result<registry::ProbeWrite, Diagnostic> parsed) {
  if (!parsed) {
    errors_.add(kLocation, parsed.error());
    return unexpected(CommandFailure{std::move(parsed).error(), Error{ErrorKind::Invalid, EINVAL, {}}});
  }
  if (auto room = state_.reserve(line.size()); !room)
    return finish_command(kLocation, line, nullptr, system_failure(std::move(room).error()));
  const std::string logged = parsed->command.command;
  return finish_command(kLocation, line, nullptr, run(*parsed, nullptr, kLocation, logged));
}

}  // namespace histd::engine
