// SPDX-License-Identifier: GPL-2.0-only
// The engine's command paths: every write is decided by the registry
// (registry::Registry::apply, pure), carried out by the deployer (which
// undoes its own failures), committed (the registry replaced) and saved; a
// refusal goes to error_log and to the event's hist file (EventNotes), as
// the kernel's own do. The Engine owns it with the state it works on (the
// registry, the deployer, the error log, the state file); the Engine's
// writes, the Restorer and the ConfigItems run their commands through it.
// Not thread-safe: every call is made under the engine's lock.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "histd/engine.h"

namespace histd::engine {

class ErrorLog;
class StateFile;

// What an event's hist file shows besides its tables.
struct EventNotes {
  // The last rejected command, shown in the hist file until the next command.
  std::optional<Diagnostic> last_error;
  uint64_t generation = 0;  // bumped by every command, so pollers see clears
};

class Commands {
 public:
  using SavedEntry = registry::SavedEntry;
  // The Engine's state and parts, each outliving this.
  struct State {
    const catalog::Catalog& catalog;
    const EngineOptions& options;
    registry::Registry& registry;  // replaced by each command that succeeds
    deploy::Deployer& deployer;
    ErrorLog& errors;
    StateFile& state;
  };
  explicit Commands(State state);
  ~Commands();  // what it held of a shared map memory budget is let go
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  const std::map<catalog::EventId, EventNotes>& notes() const { return notes_; }
  const ActivationTimes& activation_times() const { return activation_times_; }
  // What the compiles the next command needed took, made outside the lock
  // before it ran again (deploy::CompileOutside): part of its activation's
  // time.
  void set_compile_time(std::chrono::duration<double> took) { compiled_outside_ = took; }

  // ---- a command (commands.cpp) ----
  // Runs `command` (whose logged text is `text`) written to event `ev`
  // (none: a synthetic_events write, logged under `location`).
  CommandResult run(const registry::Command& command, const catalog::EventId* ev, const std::string& location,
                    const std::string& text);
  // With a map memory budget shared among trees: its lock, taken for a
  // command's decision (and commit), the registry told what the others
  // hold; engines take it after their own lock, never the other way round.
  std::unique_lock<std::mutex> budget_decisions();
  // A command's failure on `ev` the user sees: error_log and its hist file.
  CommandResult user_error(const catalog::EventId& ev, Diagnostic d, int err = EINVAL);
  // A new command on `ev`: its hist file drops an older error, pollers wake.
  void begin_command(const catalog::EventId& ev);
  // Pollers of `ev`'s hist file wake; its error stays.
  void touch(const catalog::EventId& ev) { ++notes_[ev].generation; }
  // Ends a command: a failure that has no diagnostic (the compiler, the
  // verifier, the kernel, the state directory) is logged to error_log like
  // the kernel's own errors and shown in the event's hist file; a success
  // is saved, and a save that fails anyway is logged.
  CommandResult finish_command(const std::string& location, std::string_view command, const catalog::EventId* ev,
                               CommandResult r);
  // The deployer's refusals and notes (deploy::Deployer::Log).
  void deployer_log(const catalog::EventId* event, const Diagnostic* d, const std::string& note);

  // ---- the writes (Engine's, restored entries', declarations') ----
  // One write to an event's trigger file: lines shorter than `max_bytes` (a
  // page for what users write, more for lines histd printed:
  // registry::kMaxPrintedCommandBytes). `config`: the command as the
  // configuration declared it, recorded on the trigger it creates (before
  // the state is saved).
  // `text` as a new trigger of `event` would be planned and its program
  // built, with histd's triggers and synthetic events (Engine::preview,
  // preview.cpp): its plan as explain prints it; the deployer stops before
  // its first compile, naming the unit. Nothing is carried out or logged.
  Result<std::string, CommandFailure> preview(const catalog::EventId& event, std::string_view text);
  CommandResult write_trigger(const std::string& system, const std::string& event, std::string_view text,
                              size_t max_bytes, const std::string* config = nullptr, bool may_see_addresses = true);
  CommandResult truncate_triggers(const std::string& system, const std::string& event);
  // Removes the trigger that a listing's `line` names (Engine::remove_listed).
  CommandResult remove_listed(const std::string& system, const std::string& event, std::string_view line);
  // `config`: a definition the configuration directory declares.
  CommandResult write_synthetic(std::string_view text, bool config = false);
  // One synthetic event definition, marked as the configuration's.
  CommandResult write_config_synthetic(std::string_view text);
  CommandResult truncate_synthetic();
  // An enable file's write, checked (ENOENT for no such event) and saved.
  CommandResult set_enabled(const std::string& system, const std::string& event, bool on);
  // The same, unchecked and unsaved (a restored entry's).
  CommandResult enable(const catalog::EventId& event, bool on);
  // An event's or a system's filter file's write (filters.cpp), saved.
  CommandResult set_filter(const std::string& system, const std::string& event, std::string_view text);
  CommandResult set_system_filter(const std::string& system, std::string_view text);
  // The event's, unsaved (a restored entry's).
  CommandResult filter(const catalog::EventId& event, std::string_view text);
  CommandResult write_probe_events(const std::string& file, std::string_view text, bool truncate);
  // set_event_pid's writes and truncation, options/event-fork
  // (event_pids.cpp): the deployer's list changed, then the state saved.
  CommandResult add_event_pids(std::span<const uint32_t> pids);
  CommandResult clear_event_pids();
  CommandResult set_event_fork(bool on);
  // A saved set_event_pid, in the boot it is of (another's pids name other
  // tasks: it goes).
  CommandResult restore_pids(const registry::SavedPids& saved);
  // A dynamic_events line of histd's own eprobes (own_probe), parsed.
  CommandResult write_own_probe(std::string_view line, Result<registry::ProbeWrite, Diagnostic> parsed);
  // Applies one saved entry as a command; `added`: the uid of the hist
  // trigger it made (0: none).
  CommandResult apply_saved(const SavedEntry& e, uint64_t* added = nullptr);
  // Takes a trigger the deployer's batch dropped out of the registry; with
  // `logged`, error_log says why (as a command's failure would).
  std::optional<BatchRefusal> take_back(const deploy::Deployer::Refused& refused, bool logged = true);

 private:
  // A refusal as the user sees it: error_log entries, the hist file's error, the errno.
  CommandResult refuse(registry::Refusal no, const catalog::EventId* ev, const std::string& location);
  // One command per line of `text` (synthetic_events), as the kernel's
  // trace_parse_run_command(): each is read into a registry command (an
  // empty line does nothing) and run; the first line that fails stops, the
  // lines before it stay applied.
  CommandResult apply_synthetic(std::string_view text, bool config);
  // histd's eprobes (probes.cpp): a dynamic_events line read once, and its
  // command if it is theirs (e:, or -: naming one; none: the kernel's
  // probes).
  std::optional<Result<registry::ProbeWrite, Diagnostic>> own_probe(std::string_view line) const;

  const catalog::Catalog& catalog_;
  const EngineOptions& options_;
  registry::Registry& registry_;
  deploy::Deployer& deployer_;
  ErrorLog& errors_;
  StateFile& state_;
  std::map<catalog::EventId, EventNotes> notes_;
  ActivationTimes activation_times_;
  std::chrono::duration<double> compiled_outside_{0};  // set_compile_time(), for the next run()
};

// While one lives (under the engine's lock), the deployer's commands are
// the open batch's own (deploy::Deployer::set_batch_command): a
// declaration's, a restored entry's.
class BatchCommand {
 public:
  explicit BatchCommand(deploy::Deployer& deployer);
  ~BatchCommand();
  BatchCommand(const BatchCommand&) = delete;
  BatchCommand& operator=(const BatchCommand&) = delete;

 private:
  deploy::Deployer& deployer_;
};

}  // namespace histd::engine
