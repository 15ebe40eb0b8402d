// The engine's inter-event side: the variable registry planning consults,
// synthetic events (definitions, control; delivery is in delivery.cpp),
// the trace buffer and trace_marker.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "engine/deployer.h"
#include "hist_shared.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

uint64_t monotonic_ns() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

// A synthetic_events line that does not parse (EINVAL, logged).
CommandResult not_a_definition(Diagnostic d) { return unexpected(CommandFailure{std::move(d), Error{ErrorKind::Invalid, EINVAL, {}}}); }

}  // namespace

CommandResult Engine::write_synthetic(std::string_view text) {
  std::lock_guard lock(mu_);
  return write_synthetic_locked(text);
}

CommandResult Engine::write_synthetic_locked(std::string_view text, bool config) {
  if (auto room = reserve_state(text.size()); !room)
    return finish_command("synthetic_events", text, nullptr, system_failure(std::move(room).error()));
  CommandResult r = apply_synthetic(text, config);
  // The lines before a failing one stay applied, as in the kernel: the
  // state is saved either way.
  if (r) return finish_command("synthetic_events", text, nullptr, std::move(r));
  (void)finish_command("synthetic_events", text, nullptr, Unit{});
  return finish_command("synthetic_events", text, nullptr, std::move(r));
}

CommandResult Engine::apply_synthetic(std::string_view text, bool config) {
  // Like the kernel, one command per line; the first failing line stops.
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    auto parsed = synth::parse_synth_command(line);
    if (!parsed) {
      if (parsed.error().code == ErrorCode::EmptyCommand) continue;
      log_error("synthetic_events", parsed.error());
      return not_a_definition(std::move(parsed).error());
    }
    const std::string logged = parsed->command;
    CommandResult r = run(registry::SynthWrite{std::move(*parsed), config}, nullptr, "synthetic_events", logged);
    if (!r) return r;
  }
  return Unit{};
}

CommandResult Engine::truncate_synthetic() {
  std::lock_guard lock(mu_);
  if (registry_.synthetics().empty()) return Unit{};
  if (auto room = reserve_state(0); !room)
    return finish_command("synthetic_events", "(truncate)", nullptr, system_failure(std::move(room).error()));
  return finish_command("synthetic_events", "(truncate)", nullptr,
                        run(registry::SynthTruncate{}, nullptr, "synthetic_events", "(truncate)"));
}

std::vector<synth::SynthDefinition> Engine::synthetic_events() {
  std::lock_guard lock(mu_);
  std::vector<synth::SynthDefinition> out;
  for (const auto& [name, s] : deployer_->synths()) out.push_back(s.def);
  return out;
}

std::vector<std::string> Engine::synthetic_names() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, s] : deployer_->synths()) out.push_back(name);
  return out;
}

CommandResult Engine::set_enabled(const std::string& system, const std::string& event, bool on) {
  std::lock_guard lock(mu_);
  if (system != kSynthSystem || !registry_.synthetics().count(event))
    return unexpected(CommandFailure{std::nullopt, Error{ErrorKind::NotFound, ENOENT, "only synthetic events are traced"}});
  // Saved like a command: a restart keeps tracing what was enabled.
  const std::string location = fmt::format("{}:{}/enable", kSynthSystem, event);
  const std::string_view command = on ? "1" : "0";
  if (auto room = reserve_state(0); !room)
    return finish_command(location, command, nullptr, system_failure(std::move(room).error()));
  return finish_command(location, command, nullptr, set_enabled_locked(event, on));
}

CommandResult Engine::set_enabled_locked(const std::string& event, bool on) {
  return run(registry::SynthEnable{event, on}, nullptr, fmt::format("{}:{}/enable", kSynthSystem, event), {});
}

bool Engine::enabled(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto s = system == kSynthSystem ? deployer_->synths().find(event) : deployer_->synths().end();
  return s != deployer_->synths().end() && s->second.enabled;
}

CommandResult Engine::write_marker(std::string_view text, uint32_t pid, const std::string& comm) {
  std::lock_guard lock(mu_);
  // As the kernel, whose marker is an event in a ring that is not
  // recording: no line, no ftrace:print for its triggers, EBADF.
  if (!trace_.recording())
    return system_failure(Error{ErrorKind::Invalid, EBADF, "tracing is off (tracing_on is 0)"});
  std::string body(text);
  if (!body.empty() && body.back() == '\n') body.pop_back();
  const uint64_t ts = monotonic_ns();
  const int cpu = sched_getcpu();
  trace_.append(trace::format_line(trace::LineHeader{comm, pid, cpu < 0 ? 0u : uint32_t(cpu), ts},
                                   "tracing_mark_write", body));
  // ftrace:print, as the kernel records a marker: ip, then the text (its
  // newline dropped), NUL-padded so that a string read never runs past it.
  auto it = deployer_->events().find(catalog::EventId{catalog::kMarkerSystem, catalog::kMarkerEvent});
  if (it == deployer_->events().end() || !it->second->program) return Unit{};
  auto format = catalog_.event(catalog::kMarkerSystem, catalog::kMarkerEvent);
  if (!format) return Unit{};
  std::vector<uint8_t> rec(16 + 256 + 8, 0);
  const uint16_t type = static_cast<uint16_t>((*format)->id);
  const int32_t spid = static_cast<int32_t>(pid);
  std::memcpy(rec.data(), &type, 2);
  std::memcpy(rec.data() + 4, &spid, 4);
  std::memcpy(rec.data() + 16, body.data(), std::min<size_t>(body.size(), 255));
  char task[16] = {};
  std::memcpy(task, comm.data(), std::min<size_t>(comm.size(), 15));
  auto rc = runtime::test_run(it->second->program->test_fd(), rec, ts, task);
  if (!rc) return system_failure(std::move(rc).error());
  return Unit{};
}

}  // namespace histd::engine
