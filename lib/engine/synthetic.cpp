// SPDX-License-Identifier: GPL-2.0-only
// The engine's synthetic events (definitions, enable files) and the trace
// buffer's side: its files and trace_marker, which the deployer's ring feeds.
#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"
#include "histd/engine.h"

namespace histd::engine {

using catalog::kSynthSystem;

CommandResult Engine::write_synthetic(std::string_view text) {
  std::lock_guard lock(mu_);
  return commands_->write_synthetic(text);
}

CommandResult Engine::truncate_synthetic() {
  std::lock_guard lock(mu_);
  return commands_->truncate_synthetic();
}

CommandResult Engine::set_enabled(const std::string& system, const std::string& event, bool on) {
  // A kernel event's records are printed with the kernel's names: read
  // before the lock (a synthetic event's records need none).
  if (on && catalog::event_source(system) != catalog::EventSource::Synthetic) deployer_->ring().read_kernel_names();
  return compiled_outside([&] { return commands_->set_enabled(system, event, on); });
}

CommandResult Commands::write_synthetic(std::string_view text, bool config) {
  if (auto room = state_.reserve(text.size()); !room)
    return finish_command("synthetic_events", text, nullptr, system_failure(std::move(room).error()));
  CommandResult r = apply_synthetic(text, config);
  // The lines before a failing one stay applied, as in the kernel: the
  // state is saved either way.
  if (r) return finish_command("synthetic_events", text, nullptr, std::move(r));
  (void)finish_command("synthetic_events", text, nullptr, Unit{});
  return finish_command("synthetic_events", text, nullptr, std::move(r));
}

CommandResult Commands::apply_synthetic(std::string_view text, bool config) {
  const std::string location = "synthetic_events";
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    auto parsed = registry::SynthWrite::parse(line, config);
    if (!parsed) {
      if (parsed.error().code == ErrorCode::EmptyCommand) continue;
      errors_.add(location, parsed.error());
      return unexpected(CommandFailure{std::move(parsed).error(), Error{ErrorKind::Invalid, EINVAL, {}}});
    }
    const std::string logged = parsed->command.command;
    CommandResult r = run(*parsed, nullptr, location, logged);
    if (!r) return r;
  }
  return Unit{};
}

CommandResult Commands::truncate_synthetic() {
  if (registry_.synthetics().empty()) return Unit{};
  if (auto room = state_.reserve(0); !room)
    return finish_command("synthetic_events", "(truncate)", nullptr, system_failure(std::move(room).error()));
  return finish_command("synthetic_events", "(truncate)", nullptr,
                        run(registry::SynthTruncate{}, nullptr, "synthetic_events", "(truncate)"));
}

CommandResult Commands::set_enabled(const std::string& system, const std::string& event, bool on) {
  const bool synthetic = system == kSynthSystem;
  if (synthetic ? !registry_.synthetics().count(event) : !catalog_.contains(system, event))
    return system_failure(Error{ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event)});
  // Saved like a command: a restart keeps tracing what was enabled.
  const std::string location = fmt::format("{}:{}/enable", system, event);
  const std::string_view command = on ? "1" : "0";
  if (auto room = state_.reserve(0); !room)
    return finish_command(location, command, nullptr, system_failure(std::move(room).error()));
  return finish_command(location, command, nullptr, enable(catalog::EventId{system, event}, on));
}

CommandResult Commands::enable(const catalog::EventId& event, bool on) {
  const std::string location = fmt::format("{}:{}/enable", event.system, event.name);
  if (event.system == kSynthSystem) return run(registry::SynthEnable{event.name, on}, nullptr, location, {});
  return run(registry::EventEnable{event, on}, nullptr, location, {});
}

CommandResult Engine::write_marker(std::string_view text, uint32_t pid, const std::string& comm) {
  std::lock_guard lock(mu_);
  auto st = deployer_->write_marker(text, pid, comm);
  if (!st) return system_failure(std::move(st).error());
  return Unit{};
}

}  // namespace histd::engine
