#include "histd/engine.h"

#include "engine/deployer.h"
#include "engine/ring_passes.h"

#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "histd/pipeline.h"
#include "histd/parse.h"
#include "histd/symbols.h"
#include "histd/table_reader.h"
#include "hist_shared.h"

namespace histd::engine {

std::string CommandFailure::message() const {
  if (diagnostic) return diagnostic->message();
  return error.context;
}

namespace {

// An error_log entry stamped with CLOCK_MONOTONIC, as tracefs stamps them.
readout::ErrorLogEntry stamped_entry() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  readout::ErrorLogEntry e;
  e.seconds = static_cast<uint64_t>(ts.tv_sec);
  e.microseconds = static_cast<uint32_t>(ts.tv_nsec / 1000);
  return e;
}

}  // namespace

const size_t kMaxTriggers = HISTD_MAX_TRIGGERS;
const size_t kMaxSyntheticEvents = HISTD_MAX_SYNTHETIC;

Engine::Engine(catalog::Catalog catalog, runtime::Compiler compiler, EngineOptions options, Fd control, Fd ring,
               Fd lost)
    : catalog_(std::move(catalog)),
      compiler_(std::move(compiler)),
      options_(std::move(options)),
      possible_cpus_(static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1))),
      registry_(catalog_, registry::Options{options_.max_triggers, options_.max_synthetic_events,
                                            options_.max_map_memory, possible_cpus_, options_.percpu_table_limit}),
      deployer_(std::make_unique<Deployer>(
          catalog_, compiler_, options_, std::move(control), std::move(ring), std::move(lost),
          [this](const std::string& location, const Diagnostic* d, const std::string& note) {
            if (d) return log_error(location, *d);
            readout::ErrorLogEntry e;
            e.note = note;
            error_log_.push_back(std::move(e));
          })),
      trace_(options_.trace_buffer_size, true),
      snapshot_(options_.trace_buffer_size, true),
      passes_(std::make_unique<RingPasses>()) {}

Engine::~Engine() { shutdown(); }

Expected<std::unique_ptr<Engine>> Engine::create(catalog::Catalog catalog, runtime::Compiler compiler,
                                                 EngineOptions options) {
  if (options.max_triggers == 0 || options.max_triggers > kMaxTriggers)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the trigger limit must be from 1 to {}, not {}", kMaxTriggers, options.max_triggers));
  if (options.max_synthetic_events == 0 || options.max_synthetic_events > kMaxSyntheticEvents)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the synthetic event limit must be from 1 to {}, not {}", kMaxSyntheticEvents,
                            options.max_synthetic_events));
  if (options.max_map_memory == 0) return fail(ErrorKind::Invalid, EINVAL, "the map memory limit must not be 0");
  if (options.trace_buffer_size < 4096)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the trace buffer must hold at least 4096 bytes, not {}", options.trace_buffer_size));
  auto control = runtime::create_map(BPF_MAP_TYPE_ARRAY, "histd_ctl", 4, sizeof(histd_trigger_control),
                                     HISTD_CONTROL_SLOTS);
  if (!control) return unexpected(std::move(control).error());
  auto ring = runtime::create_map(BPF_MAP_TYPE_RINGBUF, "histd_ring", 0, 0, 1u << 22);
  if (!ring) return unexpected(std::move(ring).error());
  auto lost = runtime::create_map(BPF_MAP_TYPE_PERCPU_ARRAY, "histd_lost", 4, 8, HISTD_LOST_SLOTS);
  if (!lost) return unexpected(std::move(lost).error());
  std::unique_ptr<Engine> engine(
      new Engine(std::move(catalog), std::move(compiler), std::move(options), std::move(*control),
                 std::move(*ring), std::move(*lost)));
  // The resident compiler loads its libraries now, not on the first command.
  engine->compiler_.start_server();
  if (!engine->options_.defer_consumer) engine->start_consumer();
  return engine;
}

void Engine::start_consumer() {
  if (!consumer_.joinable()) {
    // Readers wait for its first pass from now on, not from when it runs.
    passes_->running(true);
    consumer_ = std::thread([this] { consume_ring(); });
  }
  // A thread too, so after daemonizing as well.
  compiler_.watch_server();
}

void Engine::log_error(const std::string& location, const Diagnostic& d) {
  readout::ErrorLogEntry e = stamped_entry();
  e.location = log_location_.empty() ? location : log_location_;
  e.diagnostic = d;
  error_log_.push_back(std::move(e));
  while (error_log_.size() > options_.error_log_entries) error_log_.pop_front();
}

CommandResult Engine::write_trigger(const std::string& system, const std::string& event, std::string_view text) {
  std::lock_guard lock(mu_);
  return write_trigger_locked(system, event, text, parse::kMaxCommandBytes);
}

CommandResult Engine::write_trigger_locked(const std::string& system, const std::string& event,
                                           std::string_view text, size_t max_bytes, const std::string* config) {
  if (!catalog_.contains(system, event))
    return system_failure(Error{ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event)});
  EventState& ev = deployer_->event_state(system, event);
  const std::string location = fmt::format("hist:{}:{}", system, event);
  if (auto room = reserve_state(text.size()); !room) {
    ev.last_error.reset();
    ++ev.generation;
    return finish_command(location, text, &ev, system_failure(std::move(room).error()));
  }
  // The one parse of this write: the registry decides on the parsed command.
  auto parsed = parse::parse_trigger(text, max_bytes);
  ev.last_error.reset();
  ++ev.generation;
  if (!parsed) return finish_command(location, text, &ev, deployer_->user_error(ev, std::move(parsed).error()));
  const std::string logged = std::visit([](const auto& c) { return c.command; }, *parsed);
  registry::TriggerWrite write{catalog::EventId{system, event}, std::move(*parsed), config ? *config : std::string()};
  return finish_command(location, text, &ev, run(write, &ev, location, logged));
}

CommandResult Engine::finish_command(const std::string& location, std::string_view command, EventState* ev,
                                     CommandResult r) {
  auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  std::string cmd(command);
  while (!cmd.empty() && (cmd.back() == '\n' || cmd.back() == ' ' || cmd.back() == '\t')) cmd.pop_back();
  if (!r) {
    drop_state_room();
    // ENOENT and EBUSY refusals (removing what is not there or still in
    // use) are the kernel's silent ones: errno only, no error_log entry.
    const ErrorKind kind = r.error().error.kind;
    if (!r.error().diagnostic && kind != ErrorKind::NotFound && kind != ErrorKind::Busy) {
      // The whole text (a verifier log, clang's output) goes back to the
      // caller; error_log keeps tracefs's one-line shape.
      Diagnostic d{ErrorCode::CommandFailed, Span{0, 0}, cmd, first_line(r.error().error.context)};
      log_error(location, d);
      if (ev) ev->last_error = std::move(d);
    }
    return r;
  }
  if (auto st = save_state(); !st) {
    // Not expected once room was reserved; the change stays applied.
    Diagnostic d{ErrorCode::StateNotSaved, Span{0, 0}, cmd, st.error().context};
    log_error(location, d);
    if (ev) ev->last_error = std::move(d);
  }
  return r;
}

CommandResult Engine::truncate_triggers(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto it = deployer_->events().find(catalog::EventId{system, event});
  if (it == deployer_->events().end()) return Unit{};
  EventState& ev = *it->second;
  ++ev.generation;
  if (ev.triggers.empty() && ev.enables.empty()) return Unit{};
  // Opening the file with O_TRUNC is the command; the log shows it as such.
  const std::string location = fmt::format("hist:{}:{}", system, event);
  if (auto room = reserve_state(0); !room)
    return finish_command(location, "(truncate)", &ev, system_failure(std::move(room).error()));
  return finish_command(location, "(truncate)", &ev, run(registry::TriggerTruncate{it->first}, &ev, location, {}));
}

Usage Engine::usage() {
  std::lock_guard lock(mu_);
  Usage u;
  u.triggers = registry_.trigger_count();
  u.max_triggers = options_.max_triggers;
  u.synthetic_events = registry_.synthetics().size();
  u.max_synthetic_events = options_.max_synthetic_events;
  u.map_memory = registry_.map_memory();
  u.max_map_memory = options_.max_map_memory;
  u.trace_buffer_size = options_.trace_buffer_size;
  u.possible_cpus = possible_cpus_;
  return u;
}

std::string Engine::event_source(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto it = deployer_->events().find(catalog::EventId{system, event});
  return it == deployer_->events().end() ? std::string() : it->second->source;
}

Expected<bool> Engine::inject(const std::string& system, const std::string& event, std::span<const uint8_t> record) {
  std::lock_guard lock(mu_);
  auto it = deployer_->events().find(catalog::EventId{system, event});
  if (it == deployer_->events().end() || !it->second->program) return false;
  auto rc = runtime::test_run(it->second->program->test_fd(), record);
  if (!rc) return unexpected(std::move(rc).error());
  if (*rc != 0) return fail(ErrorKind::Invalid, EINVAL, fmt::format("test entry rejected the record ({})", *rc));
  return true;
}

void Engine::shutdown() {
  // The consumer takes the lock for each batch: stop it before taking it here.
  stop_consumer_ = true;
  if (consumer_.joinable()) consumer_.join();
  std::lock_guard lock(mu_);
  deployer_->shutdown();
}

}  // namespace histd::engine
