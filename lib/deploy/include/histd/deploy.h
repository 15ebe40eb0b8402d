// SPDX-License-Identifier: GPL-2.0-only
// The deployer: the kernel side of the registry. It owns every BPF object
// histd creates for its triggers (tables, variable maps, control slots,
// programs, attachments, pins, snapshots, the control array, and the trace
// ring of histd/trace_ring.h) and brings the kernel from one registry to
// the next, change by change (deploy()), with the one rollback path inside
// it. Side effects on the kernel live here and in the
// runtime below it; the engine decides with the registry, deploys, then
// commits. What only the kernel knows is read through its KernelReads
// (histd/kernel_reads.h), as data (histd/readout.h) the front ends render.
// Not thread-safe: the engine calls it under its one lock (the ring's
// consumer takes that lock for each chunk it delivers: TraceRing).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "histd/diagnostic.h"
#include "histd/event_pids.h"
#include "histd/kernel.h"
#include "histd/kernel_reads.h"
#include "histd/pipeline.h"
#include "histd/printfmt.h"
#include "histd/probe_files.h"
#include "histd/readout.h"
#include "histd/registry.h"
#include "histd/result.h"
#include "histd/runtime.h"
#include "histd/symbols.h"
#include "histd/trace_buffer.h"
#include "histd/trace_ring.h"

namespace histd::deploy {

// The ceilings of the engine's trigger and synthetic event limits
// (HISTD_MAX_TRIGGERS, HISTD_MAX_SYNTHETIC): the BPF control array has room
// for both at once.
extern const size_t kMaxTriggers;
extern const size_t kMaxSyntheticEvents;
// Maps the kernel lets one BPF program use (MAX_USED_MAPS): all triggers of
// an event are one program (docs/design/limits.md).
extern const size_t kMaxMapsPerProgram;

struct Options {
  // Attach programs to the real tracepoints. Off for tests that drive a
  // fixture catalog through the test entry only.
  bool attach = true;
  // A bpffs directory where tables are pinned, so that their counts outlive
  // histd (restart, crash); empty: not pinned.
  std::filesystem::path pin_dir;
  // Attach syscalls:sys_enter_* / sys_exit_* events through the raw
  // sys_enter / sys_exit tracepoints where the record can be rebuilt exactly
  // (catalog::syscall_event): cheaper per traced call than the classic
  // syscall tracepoints, dearer on every other system call of the machine
  // (docs/design/bpf.md, "Syscall events"). Off: every event on its own tracepoint.
  bool raw_syscalls = false;
  // Enter the scheduler's tracepoints BTF-typed where histd can build their
  // record from the arguments (pipeline::btf_entry): cheaper per event than
  // the classic tracepoint, and not skipped while another BPF program runs
  // on the CPU. Off: the classic tracepoint (docs/design/bpf.md).
  bool btf_tracepoints = true;
  // An attached tracepoint's hist triggers are compiled this many to a
  // program (the event program holds as many that are not plain, beside
  // its controls and record), its programs chained by tail calls
  // (docs/design/bpf.md, "Program chains"): a new trigger compiles one
  // small program, whatever the event has already. 0: every trigger of an
  // event in its one program.
  size_t triggers_per_program = 4;
  // Bytes of text each of the trace and snapshot buffers holds (at least
  // 4096: Engine::create refuses less).
  size_t trace_buffer_size = size_t{4} << 20;
  // Give an attached event's programs the test entry too, for tests that
  // inject records into a real event (inject()). Events that are not
  // attached always have it: it is how their records come.
  bool test_entries = false;
  // The comms of the tasks recorded events name (saved_cmdlines), shared
  // by a tree and its instances, as the kernel's is global; null: the
  // deployer's own.
  std::shared_ptr<trace::Cmdlines> cmdlines;
  // The kernel's symbols and enum constants, read once for a tree and its
  // instances (KernelNames); null: the deployer's own.
  std::shared_ptr<const KernelNames> kernel_names;
};

// A command's compiles made outside the engine's lock: a unit compiles in
// tens of milliseconds (about a hundred after an idle), and every read and
// scrape of the tree would wait for it. The engine runs the command once
// with this given (Deployer::compile_outside): the first rebuild of a
// trigger's addition or removal stops before its compile when the unit is
// neither here nor in the object cache, naming it in `needed`, and the
// command fails with ErrorKind::NotCompiled having changed nothing (its
// roll back). The engine compiles it without the lock, puts it in
// `compiled` and runs the command again, which then loads it.
struct CompileOutside {
  std::map<std::string, std::string> compiled;  // a unit's source -> its object
  std::optional<std::string> needed;
  bool leave = true;  // false: every unit not in `compiled` is compiled where needed
  // The first unit is named and the command stops there even when it is
  // cached: `histctl explain` through histd (Engine::preview), which loads
  // nothing and changes nothing.
  bool preview = false;
};

struct DeployedControl;
struct EventState;
class EventPrograms;
class KernelObjects;
class SyntheticEvents;
struct SynthState;
struct TableState;
struct Trigger;

class Deployer {
 public:
  // Where the deployer's refusals and notes go: a refusal of a command on
  // `event` (`d`: the engine logs it and shows it in the event's hist
  // file), or a `note` for error_log when `d` is null.
  using Log = std::function<void(const catalog::EventId* event, const Diagnostic* d, const std::string& note)>;
  // Creates the shared maps (control array, lost counts, pid list; the
  // ring comes with the first program, TraceRing::ring_fd). `catalog`
  // (synthetic events are added to it) and `compiler` must outlive it.
  // `kernel`: every kernel object of the command path is made through it
  // (histd/kernel.h): bpf_kernel() for histd, a fake for the unit tests.
  static Expected<std::unique_ptr<Deployer>> create(catalog::Catalog& catalog, runtime::Compiler& compiler,
                                                    Options options, Log log, std::shared_ptr<Kernel> kernel);
  ~Deployer();
  Deployer(const Deployer&) = delete;
  Deployer& operator=(const Deployer&) = delete;

  // Brings the kernel from the current registry to `next` by `changes`
  // (`written`: the event the command was written to, none for a
  // synthetic_events write; `text`: the command as logged). On a failure
  // what the earlier changes created goes again (roll_back): the kernel is
  // as before.
  CommandResult deploy(const std::vector<registry::Change>& changes, const registry::Registry& next,
                       const catalog::EventId* written, const std::string& text);
  // The compiles the next deploy() may leave to the engine (CompileOutside);
  // null: it compiles each unit itself. The engine holds `outside`.
  void compile_outside(CompileOutside* outside);
  // Undoes what deploy() carried out of `changes` (their additions go), as
  // its own failure would: for a preview that, against expectation, did
  // not stop.
  void take_back(const std::vector<registry::Change>& changes);

  // ---- what only the kernel knows, for the engine's reads and saves
  // (histd/kernel_reads.h) ----
  const KernelReads& reads() const { return reads_; }
  // Sets a restored trigger's Missed base (KernelReads::missed_base): `base`
  // as saved, or the counter now if it is below (a dispatcher attached
  // afresh).
  void restore_missed_base(uint64_t uid, uint64_t base);
  // Runs one record through the event's loaded program (the raw_tp test
  // entry): false when the event has none.
  Expected<bool> inject(const catalog::EventId& event, std::span<const uint8_t> record);

  // ---- the ring: trace lines of enabled synthetic events and recorded
  // events, snapshot() notices, and the trace and snapshot buffers they go
  // to (thread-safe, see histd/trace_ring.h) ----
  TraceRing& ring() { return *ring_; }
  // A trace_marker write by task `pid` (`comm`): its trace line, and its
  // ftrace:print record through that event's program. EBADF while
  // tracing_on is 0, as the kernel.
  Status write_marker(std::string_view text, uint32_t pid, const std::string& comm);
  // ---- probe events: the kernel's own, defined through its kprobe_events,
  // uprobe_events or dynamic_events (histd/probe_files.h) ----
  ProbeFiles& probe_files() { return probe_files_; }
  // ---- set_event_pid and options/event-fork: which tasks' events every
  // program of this deployer sees (histd/event_pids.h) ----
  EventPids& event_pids() { return *pids_; }
  const EventPids& event_pids() const { return *pids_; }
  const symbols::SystemResolver& resolver() const { return names_->resolver(); }  // kallsyms read on first use

  // ---- restore and shutdown ----
  // While restoring, rebuilt programs are not installed: install_restored()
  // installs each event's once at the end.
  void set_restoring(bool on);
  void install_restored(std::vector<std::string>& problems);
  // ---- batches: many commands, one load per event ----
  // Between begin_batch() and end_batch(), an event of plain hist triggers
  // (no variables, references or actions; no control trigger; not
  // recorded) is compiled and checked at each change (a batch's own
  // command: only by end_batch(), see set_batch_command), but its program
  // is loaded once, by end_batch(): restoring or reloading N triggers loads
  // an event's program once instead of once per trigger (the verifier's
  // work grows with the program). A program the kernel refuses then is
  // built again trigger by trigger in creation order, as single commands
  // would have been; the triggers it still refuses are dropped (tables
  // adopted from pins stay pinned) and returned for the engine to take
  // back from its registry.
  struct Refused {
    uint64_t uid = 0;
    Error error;
  };
  void begin_batch();
  // Marks the commands that follow, until unset, as the batch's own (the
  // engine does: a restore's saved entries, a reload's declarations). Those
  // were accepted before, or are reported at their file and line when the
  // end finds them at fault, so their programs are compiled once, by
  // end_batch(), not again with each trigger they gain (with four triggers a
  // program, three of every four compiles were thrown away); one that fails
  // is built trigger by trigger, which names the one at fault. A user's
  // command made meanwhile (the tree, the socket) is compiled at once, with
  // whatever of the batch its programs hold: its write must not succeed and
  // then be taken back for a compile.
  void set_batch_command(bool on);
  std::vector<Refused> end_batch();
  // Removes pins nothing uses any more (left by a histd that died with
  // triggers the state file no longer names).
  void sweep_pins();
  // Detaches every program; pinned tables stay pinned (their counts are
  // kept for the next start), the others are freed.
  void shutdown();

 private:
  Deployer(catalog::Catalog& catalog, runtime::Compiler& compiler, Options options, std::shared_ptr<Kernel> kernel,
           Fd control, Fd lost, Fd pids, Log log);
  EventState& event_state(const catalog::EventId& event);
  // A refusal on `ev`: logged there (Log), returned to the command.
  CommandResult user_error(EventState& ev, Diagnostic d, int err = EINVAL);
  void roll_back(const std::vector<const registry::Change*>& done);
  // One change; `first`: no change of the command came before.
  CommandResult deploy(const registry::Change& c, const registry::Registry& next, EventState* ev,
                       const std::string& text, bool first);
  // deploy()'s removal of trigger `uid` (`first`: the command's own change,
  // whose failure fails it) and definition of a probe event.
  CommandResult deploy_removed(EventState& target, uint64_t uid, bool first);
  CommandResult define_probe(const catalog::EventId& event, const registry::Registry& next);
  CommandResult deploy_added(const registry::Change& c, const registry::Registry& next, EventState& target,
                             EventState* ev, const std::string& text);
  CommandResult deploy_trigger(EventState& ev, const registry::HistTrigger& h, const std::string& command);
  CommandResult control_trigger(EventState& ev, const registry::Change& c);
  CommandResult truncate_event(EventState& ev);
  CommandResult deploy_control(EventState& ev, const registry::ControlTrigger& e);
  // A kernel event's enable file: its records to the trace buffer, or no
  // longer. Recording starts when it is enabled or an enable_event/
  // disable_event targets it, and stops when neither holds.
  CommandResult record_event(EventState& ev, bool on);
  Status start_recording(EventState& ev);
  // Sets the event's record filter; a recorded event's program is rebuilt
  // with it (on failure the old filter and program stay).
  Status refilter(EventState& ev, std::optional<plan::TypedFilter> filter);
  // Change::Kind::EventFiltered: the event's filter as `next` has it, the
  // one before kept for a roll back.
  CommandResult filter_event(EventState& ev, const registry::Registry& next);
  void stop_recording(EventState& ev);
  // An enable_event/disable_event's hold on its target's recording, and the
  // release of a control trigger (its slot, that hold).
  Status hold_target(const DeployedControl& e);
  void release_control(DeployedControl& e);
  void remove_trigger_uid(uint64_t uid);
  Status remove_trigger(EventState& ev, Trigger* going);
  enum class Release { Removed, Undo };  // by a command; undone: the command that made it failed
  // Releases a trigger whose program could not be rebuilt without it.
  void drop_trigger(EventState& ev, Trigger* going, Release how = Release::Removed);
  CommandResult remove_control(EventState& ev, DeployedControl* going);
  // end_batch()'s fallback for an event whose whole program the kernel refused.
  void build_one_by_one(EventState& ev, std::vector<Refused>& refused);
  // Rebuilds the events whose enable_hist/disable_hist target `target`,
  // after its set of hist triggers changed.
  void refresh_enablers_of(const EventState& target);
  // A rebuild refused because the event's program would use more maps than
  // the kernel allows: the command's refusal names the limit (ENOSPC).
  CommandResult rebuild_failure(EventState& ev, const std::string& command, Error e);
  void release_trigger(Trigger& t, Release how = Release::Removed);

  // First: every kernel object below is made through it, and goes before it.
  const std::shared_ptr<Kernel> kernel_;
  catalog::Catalog& catalog_;  // the engine's: synthetic events are added to it
  runtime::Compiler& compiler_;
  const Options options_;
  const uint32_t possible_cpus_;  // per-CPU maps hold a value per possible CPU
  uint64_t next_serial_ = 1;      // Trigger::serial
  Log log_;
  // The control array and its slots, the tables and their pins
  // (lib/deploy/kernel_objects.h); before ring_, which borrows the array.
  std::unique_ptr<KernelObjects> objects_;
  // set_event_pid's list and options/event-fork; after objects_, whose
  // control array holds its word.
  std::unique_ptr<EventPids> pids_;
  std::map<catalog::EventId, std::unique_ptr<EventState>> events_;
  // The kernel side of the registry's synthetic events (SyntheticEvents
  // changes them).
  std::map<std::string, std::unique_ptr<SynthState>> synths_;
  // Each eprobe's `if FILTER`, typed (a program's unit points into it).
  std::map<catalog::EventId, plan::TypedFilter> eprobe_filters_;
  bool shutting_down_ = false;
  // The change being deployed may leave compiles to the engine
  // (CompileOutside): its first rebuild's, and for a trigger on a
  // synthetic event its first generator's too.
  bool may_stop_ = false;
  ProbeFiles probe_files_;
  const std::shared_ptr<const KernelNames> names_;  // before ring_, which uses them
  // The ring, its consumer and buffers. Its consumer asks this deployer's
  // state through Notices: ~Deployer stops it before anything goes.
  std::unique_ptr<TraceRing> ring_;
  // An event's programs: laid out, built, loaded, installed
  // (lib/deploy/event_programs.h); reads the members above.
  std::unique_ptr<EventPrograms> programs_;
  // Synthetic events defined, enabled, removed, and the programs that
  // generate them kept in step (lib/deploy/synthetic_events.h).
  std::unique_ptr<SyntheticEvents> synthetics_;
  // What only the kernel knows, read for the engine; reads the members above.
  KernelReads reads_;
};

}  // namespace histd::deploy
