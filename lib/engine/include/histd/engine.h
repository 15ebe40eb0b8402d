// SPDX-License-Identifier: GPL-2.0-only
// The engine: runs each command atomically (a failed command changes
// nothing) — the registry (histd/registry.h) decides, the deployer
// (histd/deploy.h: it owns every BPF object, and rebuilds exactly the
// events a change affects) carries it out on the kernel, then the engine
// commits and saves. Its reads return data, never text. It is made of
// parts, each with one job: private to lib/engine, the command paths
// (engine/commands.h), the state file (engine/state_file.h) and error_log
// (engine/error_log.h); handed to the front ends, its reads (reads(),
// histd/engine_reads.h), the restore of the saved state (restorer(),
// histd/restorer.h) and the configuration directory's items (config(),
// histd/config_items.h).
// Thread-safe: every public call, the handed-out parts' too, takes the
// engine's one lock; the trace ring it hands out locks itself.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "histd/config_items.h"
#include "histd/deploy.h"
#include "histd/diagnostic.h"
#include "histd/engine_reads.h"
#include "histd/registry.h"
#include "histd/restorer.h"
#include "histd/result.h"
#include "histd/runtime.h"

namespace histd::engine {

using deploy::kMaxMapsPerProgram;
using deploy::kMaxSyntheticEvents;
using deploy::kMaxTriggers;
using deploy::RingLost;
using histd::CommandFailure;
using histd::CommandResult;

class Commands;
class ErrorLog;
class StateFile;

// One --max-map-memory for several engines (the top tree and each
// instance): each says what it holds after every command, and decides a
// command knowing what the others hold. A command is decided and committed
// under decisions(), so that two trees cannot both take the last bytes.
class MapMemoryBudget {
 public:
  std::mutex& decisions() { return decisions_; }
  // What every engine but `self` holds (under decisions()).
  uint64_t held_by_others(const void* self) const;
  uint64_t held() const;
  void set(const void* self, uint64_t bytes);
  void forget(const void* self);

 private:
  std::mutex decisions_;
  mutable std::mutex mu_;
  std::map<const void*, uint64_t> held_;
};

struct EngineOptions {
  // The deployer's: attaching, pins, raw syscalls, programs' sizes, the
  // trace buffers (each field's comment is there).
  deploy::Options deploy;
  size_t error_log_entries = 8;  // as tracefs keeps
  // Where the triggers are saved after every change and restored from at
  // start; empty: not saved.
  std::filesystem::path state_file;
  // Leave the thread that drains the ring buffer to start_consumer(): a
  // process that forks after creating the engine (daemonizing) starts it
  // after the fork, since threads do not survive one.
  bool defer_consumer = false;

  // What the tree may hold (each limit's comment is there). At most
  // kMaxTriggers triggers and kMaxSyntheticEvents synthetic events.
  registry::Limits limits;
  // Engines that draw on one max_map_memory together (the top tree and its
  // instances): null, this engine's alone.
  std::shared_ptr<MapMemoryBudget> map_budget;
  // The resident compiler's idleness (each field's comment is there). For
  // the engine that owns the compiler.
  runtime::IdleOptions compiler;
};

class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> create(catalog::Catalog catalog, runtime::Compiler compiler,
                                                  EngineOptions options);
  // An engine that compiles through another's compiler (`shared`, from
  // shared_compiler()): the tree's instances. The compiler's owner starts and
  // watches its resident server; this engine only uses it.
  static Expected<std::unique_ptr<Engine>> create(catalog::Catalog catalog, std::shared_ptr<runtime::Compiler> shared,
                                                  EngineOptions options);
  std::shared_ptr<runtime::Compiler> shared_compiler() const { return compiler_; }
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const catalog::Catalog& catalog() const { return catalog_; }
  // Which compiler answered (tests); the engine started its server.
  const runtime::Compiler& compiler() const { return *compiler_; }
  // A trigger change is coming: the resident compiler, if idleness stopped
  // it, starts loading now (runtime::Compiler::warm).
  void warm_compiler() const { compiler_->warm(); }

  // One write(2) to events/<system>/<event>/trigger; an O_TRUNC open of it
  // (truncate_triggers) removes every hist trigger of the event. A writer
  // who may not see kernel addresses (symbols::may_see_kernel_addresses)
  // may not compare, compute with or copy one (ErrorCode::AddressHidden).
  CommandResult write_trigger(const std::string& system, const std::string& event, std::string_view text,
                              bool may_see_addresses = true);
  // What `text` written to the event's trigger file would compile to, with
  // the triggers and synthetic events histd has (`histctl explain` of a
  // command that uses them): the new trigger's plan and the first program
  // it rebuilds. Nothing changes; a refusal is the write's, unlogged. Only
  // a new hist trigger of the event alone (no field variable on another).
  struct Preview {
    std::string plan;
    std::string source;
  };
  Result<Preview, CommandFailure> preview(const std::string& system, const std::string& event, std::string_view text);
  CommandResult truncate_triggers(const std::string& system, const std::string& event);

  // ---- reads: data, which the front ends render (render::trigger_file,
  // render::hist_text, ...) as the reader asks and may see
  // (histd/engine_reads.h; each call takes the lock) ----
  Reads& reads() { return *reads_; }
  const symbols::SystemResolver& resolver() const { return deployer_->resolver(); }  // kallsyms read on first use
  // Since the engine was created (histd's start).
  std::chrono::steady_clock::duration uptime() const { return std::chrono::steady_clock::now() - started_; }
  // When it was created, on the wall clock: read once, so that it is the
  // same at every scrape (now minus uptime moves by the clocks' drift).
  std::chrono::system_clock::time_point started_at() const { return started_at_; }

  // Runs one record through the event's loaded program (the raw_tp test
  // entry): tests and trace_marker. Returns false when the event has no triggers.
  Expected<bool> inject(const std::string& system, const std::string& event, std::span<const uint8_t> record);

  // ---- synthetic events, the trace buffer, trace_marker ----
  // One write(2) to synthetic_events: a definition, or `!name` to remove one.
  CommandResult write_synthetic(std::string_view text);
  // Opening synthetic_events with O_TRUNC: removes every synthetic event
  // (none, with EBUSY, while one is in use).
  CommandResult truncate_synthetic();
  // kprobe_events, uprobe_events, dynamic_events' probe lines (`file`): the
  // kernel's, written through (deploy::ProbeFiles::write_probe_events); a
  // refusal is logged to error_log. dynamic_events' e: lines define
  // histd's own eprobes (registry::Eprobe): checked and refused as the
  // kernel would ("event_probe" in error_log), listed in dynamic_events
  // (Reads::probe_events), saved with the triggers.
  CommandResult write_probe_events(const std::string& file, std::string_view text, bool truncate);
  // events/<system>/<event>/filter and events/<system>/filter (lib/engine/
  // filters.cpp): which records of an enabled event are recorded, in the
  // kernel's filter language, "0" clearing; saved with the triggers. A
  // filter with an error is refused with the kernel's error_log entry and
  // changes nothing. Reads::filter reads an event's.
  CommandResult set_filter(const std::string& system, const std::string& event, std::string_view text);
  CommandResult set_system_filter(const std::string& system, std::string_view text);
  // events/synthetic/<name>/enable: whether the event's records are traced.
  // Any event's enable file: its records go to the trace buffer (a kernel
  // event's program then copies each record to histd; a synthetic event's
  // generating programs do). Saved, like a command.
  CommandResult set_enabled(const std::string& system, const std::string& event, bool enabled);
  // set_event_pid and options/event-fork (lib/engine/event_pids.cpp): while
  // a list is in force, this tree's programs see only the events its tasks
  // decide (deploy::EventPids), hist triggers and records alike, as the
  // kernel's trace_array does. The list is the kernel side's (BPF changes
  // it while forks are followed); saved with the triggers, for this boot.
  // event_pids(): the pids, ascending; add_event_pids(): a write (ENOSPC past
  // the limit, changing nothing); clear_event_pids(): an O_TRUNC open.
  std::vector<uint32_t> event_pids();
  CommandResult add_event_pids(std::span<const uint32_t> pids);
  CommandResult clear_event_pids();
  bool event_fork();
  CommandResult set_event_fork(bool on);
  // The trace ring (histd/trace_ring.h): the trace and snapshot files,
  // trace_pipe, tracing_on, options/stacktrace, what the ring lost and
  // delivered. Handed out rather than forwarded: what it offers the front
  // ends is thread-safe without the engine's lock (its buffers lock
  // themselves, its switches and counts are the kernel's maps and atomics),
  // as these reads always ran; the part that touches the deployer's state
  // (learning a format) is the deployer's, under the lock. It lives as
  // long as the engine.
  deploy::TraceRing& trace_ring() const { return deployer_->ring(); }
  // One write(2) to trace_marker by task `pid` (`comm`): a trace line, and a
  // record of ftrace:print through that event's triggers. Under the lock:
  // the record runs through the deployer's programs of ftrace:print.
  CommandResult write_marker(std::string_view text, uint32_t pid, const std::string& comm);

  // Starts draining the ring (trace lines, snapshots) and watching the resident
  // compiler (Compiler::watch_server); create() does unless options.defer_consumer.
  void start_consumer();

  // Restoring the state file at start, retrying what did not restore, and
  // the report of it (histd/restorer.h; each call takes the lock).
  Restorer& restorer() { return *restorer_; }
  // Removes the trigger that `line` names as `histctl list` and the trigger
  // file print it (" [active]", " [paused]" or " [not restored: ...]" may
  // follow): ENOENT when none matches.
  CommandResult remove_listed(const std::string& system, const std::string& event, std::string_view line);

  // The configuration directory's side (config::reconcile): its items,
  // added, removed and updated in batches (histd/config_items.h; each call
  // takes the lock).
  ConfigItems& config() { return *config_; }
  // ---- error_log (Reads::error_log reads it) ----
  // An entry for a line the engine never saw: a declaration that does not
  // parse, a file histd will not read, a dynamic_events line or an instance
  // the tree refused.
  void log_config_error(const std::string& location, const Diagnostic& d);
  void clear_error_log();

  // Detaches every program. Pinned tables stay pinned (their counts are
  // kept for the next start); the others are freed.
  void shutdown();

 private:
  Engine(catalog::Catalog catalog, std::shared_ptr<runtime::Compiler> compiler, EngineOptions options);
  static Expected<std::unique_ptr<Engine>> make(catalog::Catalog catalog, std::shared_ptr<runtime::Compiler> compiler,
                                                EngineOptions options, bool owns_compiler);
  // Runs `command` (a call of commands_) under mu_, first letting the
  // deployer leave its compile to this, which compiles without mu_ and
  // runs it again (deploy::CompileOutside): reads and scrapes do not wait
  // for a compile. A changed state may need another; the last run compiles
  // under mu_ as any other command.
  CommandResult compiled_outside(const std::function<CommandResult()>& command);

  std::mutex mu_;
  catalog::Catalog catalog_;
  std::shared_ptr<runtime::Compiler> compiler_;
  bool owns_compiler_ = true;  // starts and watches its resident server
  EngineOptions options_;
  // error_log (lib/engine/error_log.h).
  std::unique_ptr<ErrorLog> errors_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  const std::chrono::system_clock::time_point started_at_ = std::chrono::system_clock::now();
  // THE logical state: which triggers and synthetic events exist. Every
  // command is decided by it (registry::Registry::apply) and deployed
  // before it is replaced.
  registry::Registry registry_;
  // The state file, and the saved entries that did not restore
  // (lib/engine/state_file.h); reads registry_ and the deployer's reads.
  std::unique_ptr<StateFile> state_;
  // The command paths (lib/engine/commands.h), with each hist file's last
  // error and generation: every write runs through them under mu_. Before
  // deployer_, so that it outlives it: the deployer's Log calls it.
  std::unique_ptr<Commands> commands_;
  // The kernel side (histd/deploy.h): every BPF object the triggers and
  // synthetic events of registry_ are deployed as, and the ring's buffers.
  std::unique_ptr<deploy::Deployer> deployer_;
  // The parts the front ends reach (restorer(), config(), reads()), each
  // taking mu_ for its calls.
  std::unique_ptr<Restorer> restorer_;
  std::unique_ptr<ConfigItems> config_;
  std::unique_ptr<Reads> reads_;
};

}  // namespace histd::engine
