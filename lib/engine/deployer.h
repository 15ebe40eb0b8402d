// The deployer: the kernel side of the registry. It owns every BPF object
// histd creates for its triggers (tables, variable maps, control slots,
// programs, attachments, pins, snapshots, the control array, the ring) and
// brings the kernel from one registry to the next, change by change
// (deploy()), with the one rollback path inside it. The engine holds one,
// decides with the registry, deploys, then commits; its reads ask the
// deployer for the state they read (maps, pause flags, missed counts).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_state.h"
#include "histd/engine.h"
#include "histd/pipeline.h"
#include "histd/registry.h"
#include "histd/runtime.h"

namespace histd::engine {

class Deployer {
 public:
  // Where the deployer's refusals and notes go: the engine's error_log (an
  // entry under `location` for `d`, or `note` when `d` is null).
  using Log = std::function<void(const std::string& location, const Diagnostic* d, const std::string& note)>;
  Deployer(catalog::Catalog& catalog, runtime::Compiler& compiler, const EngineOptions& options, Fd control,
           Fd ring, Fd lost, Log log);

  // Brings the kernel from the current registry to `next` by `changes`
  // (`ev`: the event the command was written to, none for a synthetic_events
  // write; `text`: the command as logged). On a failure what the earlier
  // changes created goes again (roll_back): the kernel is as before.
  CommandResult deploy(const std::vector<registry::Change>& changes, const registry::Registry& next, EventState* ev,
                       const std::string& text);

  // ---- the kernel state, for the engine's reads and restore ----
  EventState& event_state(const std::string& system, const std::string& event);
  const std::map<catalog::EventId, std::unique_ptr<EventState>>& events() const { return events_; }
  std::map<catalog::EventId, std::unique_ptr<EventState>>& events() { return events_; }
  const std::map<std::string, SynthState>& synths() const { return synths_; }
  // A trigger by uid, with its event; {nullptr, nullptr} when gone.
  std::pair<EventState*, Trigger*> find_trigger(uint64_t uid) const;
  int ring() const { return ring_.get(); }
  int lost() const { return lost_.get(); }
  bool is_paused(uint32_t slot) const;
  std::string enable_line(const EnableTrigger& e) const;
  // The events `ev`'s programs missed since its dispatcher was attached
  // (0 for an event without one), and what a trigger on it shows.
  uint64_t event_missed(const EventState& ev) const;
  uint64_t trigger_missed(const EventState& ev, const Trigger& t) const;
  // A failure the user sees on `ev`: its hist file's error, an error_log entry.
  CommandResult user_error(EventState& ev, Diagnostic d, int err = EINVAL);
  Status rebuild(EventState& ev, const std::vector<Trigger*>& triggers, const std::vector<EnableTrigger*>& enables);
  void remove_trigger_uid(uint64_t uid);
  Status set_paused(uint32_t slot, bool paused);

  // ---- restore and shutdown ----
  // While restoring, rebuilt programs are not installed: install_restored()
  // installs each event's once at the end.
  void set_restoring(bool on) { restoring_ = on; }
  void install_restored(std::vector<std::string>& problems);
  // Removes pins nothing uses any more (left by a histd that died with
  // triggers the state file no longer names).
  void sweep_pins();
  // Detaches every program; pinned tables stay pinned (their counts are
  // kept for the next start), the others are freed.
  void shutdown();

 private:
  void roll_back(const std::vector<const registry::Change*>& done);
  // One change; `first`: no change of the command came before.
  CommandResult deploy(const registry::Change& c, const registry::Registry& next, EventState* ev,
                       const std::string& text, bool first);
  CommandResult deploy_added(const registry::Change& c, const registry::Registry& next, EventState& target,
                             EventState* ev, const std::string& text);
  CommandResult deploy_trigger(EventState& ev, const registry::HistTrigger& h, const std::string& command);
  CommandResult control_trigger(EventState& ev, const registry::Change& c);
  CommandResult truncate_event(EventState& ev);
  CommandResult deploy_enable(EventState& ev, const registry::EnableTrigger& e);
  CommandResult define_synth(const registry::Synthetic& s);
  void remove_synth(const std::string& name);
  CommandResult enable_synth(const std::string& name, bool on);
  Status remove_trigger(EventState& ev, Trigger* going);
  // Releases a trigger whose program could not be rebuilt without it.
  void drop_trigger(EventState& ev, Trigger* going);
  CommandResult remove_enable(EventState& ev, EnableTrigger* going);
  std::vector<EnableTrigger*> enables_of(EventState& ev);
  std::vector<Trigger*> triggers_of(EventState& ev);
  // Rebuilds the events whose enable_hist/disable_hist target `target`,
  // after its set of hist triggers changed.
  void refresh_enablers_of(const EventState& target);
  // rebuild()'s steps (deployer_rebuild.cpp): the parts, read from the state; their maps; the swap.
  pipeline::EventParts event_parts(const EventState& ev, const std::vector<Trigger*>& triggers,
                                   const std::vector<EnableTrigger*>& enables, bool attaches) const;
  Expected<std::map<std::string, int>> unit_maps(const pipeline::EventUnit&, const std::vector<Trigger*>&) const;
  Status swap_in(EventState& ev, runtime::EventProgram program, bool attaches, std::optional<catalog::SyscallEvent>);
  void release_slot(uint32_t slot);
  std::string pin_base(const plan::HistPlan& plan) const;
  std::string event_pin_base(const EventState& ev, const std::optional<catalog::SyscallEvent>& syscall) const;
  // pipeline::syscall_entry() of `ev`'s format, with options_.raw_syscalls.
  std::optional<catalog::SyscallEvent> raw_syscall(const EventState& ev) const;
  Status pin_table(TableState& t);
  bool adopt_pinned(TableState& t);
  // A rebuild refused because the event's program would use more maps than
  // the kernel allows: the command's refusal names the limit (ENOSPC).
  CommandResult rebuild_failure(EventState& ev, const std::string& command, Error e);
  Expected<std::shared_ptr<TableState>> acquire_table(const plan::HistPlan& plan);
  Expected<uint32_t> allocate_slot();
  enum class Release { Removed, Undo };  // by a command; undone: the command that made it failed
  void release_trigger(Trigger& t, Release how = Release::Removed);
  // Whether the deployed programs of synthetic event `from` generate `to`,
  // directly or down a chain.
  bool synth_reaches(const std::string& from, const std::string& to) const;
  Status refresh_synth(const std::string& name);
  // Rebuilds every event whose programs run synthetic event `name`'s
  // triggers (directly or down a chain), after those changed.
  Status rebuild_generators(const std::string& name);
  // After a trigger or enable of synthetic event `ev` went: its control word
  // and the programs of the events generating it follow.
  void after_synth_removal(EventState& ev);

  catalog::Catalog& catalog_;  // the engine's: synthetic events are added to it
  runtime::Compiler& compiler_;
  const EngineOptions& options_;
  Log log_;
  Fd control_;  // the shared per-trigger control array
  std::vector<bool> slot_used_;
  std::map<catalog::EventId, std::unique_ptr<EventState>> events_;
  std::map<std::string, std::weak_ptr<TableState>> named_tables_;
  std::map<std::string, SynthState> synths_;  // the kernel side of the registry's synthetic events
  Fd ring_;  // generated synthetic events, shared by every unit
  Fd lost_;  // what the ring had no room for (HISTD_LOST_*), shared by every unit
  bool restoring_ = false;
  bool shutting_down_ = false;
};

}  // namespace histd::engine
