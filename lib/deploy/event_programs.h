// SPDX-License-Identifier: GPL-2.0-only
// An event's programs: which program of its chain holds each trigger
// (layout), each changed one built from the deployer's state (its
// triggers, controls, record, the synthetic events it generates),
// compiled, loaded, installed behind the event's dispatcher and kept
// (rebuild); in a batch, compiled now and loaded at the end (defer). The
// Deployer owns it and decides when an event is rebuilt and with what; this
// reads the deployer's state through references and writes only the
// rebuilt event's programs and the triggers' places in them. Not
// thread-safe: the deployer calls it under the engine's lock.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "deploy/state.h"

namespace histd::deploy {

class KernelObjects;

class EventPrograms {
 public:
  // The deployer's state and services, each outliving this.
  struct State {
    catalog::Catalog& catalog;
    runtime::Compiler& compiler;
    Kernel& kernel;
    const Options& options;
    const std::map<catalog::EventId, std::unique_ptr<EventState>>& events;
    const std::map<std::string, std::unique_ptr<SynthState>>& synths;
    const std::map<catalog::EventId, plan::TypedFilter>& eprobe_filters;
    KernelObjects& objects;
    TraceRing& ring;        // its ring is made with the first program
    const EventPids& pids;  // every unit asks its pid list
  };
  explicit EventPrograms(State state);

  // While restoring, rebuilt programs are not installed: install_all()
  // installs each event's once at the end (Deployer::install_restored).
  void set_restoring(bool on) { restoring_ = on; }
  // Between the two, an event deferrable() is compiled but not loaded
  // (defer); Deployer::end_batch rebuilds it after end_batch().
  void begin_batch() { batching_ = true; }
  void end_batch() { batching_ = false; }
  // A batch's own command: its programs are not even compiled until the
  // end (Deployer::set_batch_command).
  void set_batch_command(bool on) { batch_command_ = on; }
  // Units compiled outside the engine's lock (CompileOutside), read by
  // every build(); null: none.
  void compile_outside(CompileOutside* outside) { outside_ = outside; }
  // The next rebuild()'s compiles before its load stop at a unit neither
  // compiled outside nor cached (Deployer::deploy: a trigger's addition
  // or removal, the command's first change, whose failure undoes it all).
  void stop_before_compile(bool on) { stop_next_ = on && outside_ && (outside_->leave || outside_->preview); }

  // Compiles and loads the event's programs holding `triggers`, then
  // installs them behind its dispatcher. Nothing observable changes unless
  // every step succeeds.
  Status rebuild(EventState& ev, const std::vector<Trigger*>& triggers, const std::vector<DeployedControl*>& enables);
  // Every program of the event's chain in its slot, and none past it.
  Status install_all(EventState& ev);
  // The test entries of the event's programs, in the order they run.
  std::vector<int> test_fds(const EventState& ev) const;

  // ---- eprobes (probes.cpp) ----
  // The event an eprobe `ev` is attached to (its program runs at that
  // tracepoint); nullopt for any other event.
  std::optional<catalog::EventId> eprobe_attached(const EventState& ev) const;
  // The recorded eprobes on synthetic events, each with the name of the
  // one it is attached to (one pass over the events); the record one of
  // them computes, as the generators of its synthetic event build it.
  std::vector<std::pair<std::string, const EventState*>> synth_eprobes() const;
  std::optional<codegen::EprobeOutput> eprobe_output(const EventState& ev, const std::string& synth) const;
  // pipeline::syscall_entry() of `ev`'s format, with Options::raw_syscalls.
  std::optional<catalog::SyscallEvent> raw_syscall(const EventState& ev) const;
  // pipeline::btf_entry() of `ev`'s format, with Options::btf_tracepoints.
  std::optional<codegen::BtfEntry> btf_tracepoint(const EventState& ev) const;

 private:
  // rebuild()'s steps (chain.cpp): which program holds each trigger; each
  // changed program built (program_build.cpp), loaded, installed, kept.
  bool chained(const EventState& ev) const;
  struct Layout {
    std::vector<Trigger*> event;                // in the event program
    std::vector<std::vector<Trigger*>> groups;  // ProgramGroup g's
  };
  Expected<Layout> layout(const EventState& ev, const std::vector<Trigger*>& triggers) const;
  struct Built;
  struct Loaded;
  // `group`: a program of the event's chain (no controls, no record).
  Expected<Built> build(EventState& ev, const std::vector<Trigger*>& triggers,
                        const std::vector<DeployedControl*>& enables, bool group);
  // The event program (when `event_dirty`) and the `dirty` groups, built.
  Expected<Loaded> build_changed(EventState& ev, const Layout& lay, const std::vector<DeployedControl*>& enables,
                                 bool event_dirty, const std::vector<size_t>& dirty);
  Status defer(EventState& ev, const Layout& lay);
  // build()'s object of `source`: compiled outside, or cached while a
  // rebuild stops before compiling (ErrorKind::NotCompiled on neither, and
  // always in a preview), or compiled now.
  Expected<std::string> object_of(const std::string& source) const;
  Status attach(EventState& ev, const pipeline::EventParts& parts);
  Status load(EventState& ev, Loaded& loaded);
  Status install(EventState& ev, const Layout& lay, const Loaded& loaded, bool event_has);
  void commit(EventState& ev, const Layout& lay, Loaded& loaded, bool event_has);
  // Whether a batch may leave `ev`'s program to end_batch() (see there).
  bool deferrable(const EventState& ev, const std::vector<Trigger*>& triggers,
                  const std::vector<DeployedControl*>& enables) const;
  // build()'s steps (program_build.cpp): the parts, read from the state; their maps.
  pipeline::EventParts event_parts(const EventState& ev, const std::vector<Trigger*>& triggers,
                                   const std::vector<DeployedControl*>& enables, bool attaches) const;
  // The maps a program is loaded with; the ring only when `referenced` (its
  // object's maps that its code uses) names it.
  Expected<std::map<std::string, int>> unit_maps(const pipeline::EventUnit&, const std::vector<Trigger*>&,
                                                 const std::set<std::string>& referenced) const;

  catalog::Catalog& catalog_;
  runtime::Compiler& compiler_;
  Kernel& kernel_;
  const Options& options_;
  const std::map<catalog::EventId, std::unique_ptr<EventState>>& events_;
  const std::map<std::string, std::unique_ptr<SynthState>>& synths_;
  const std::map<catalog::EventId, plan::TypedFilter>& eprobe_filters_;
  KernelObjects& objects_;
  TraceRing& ring_;
  const EventPids& pids_;
  bool restoring_ = false;
  bool batching_ = false;       // begin_batch() .. end_batch()
  bool batch_command_ = false;  // set_batch_command()
  CompileOutside* outside_ = nullptr;
  bool stop_next_ = false;  // stop_before_compile(), for the next rebuild()
  bool stopping_ = false;   // that rebuild, until its builds are done
};

// What rebuild() loads: one of an event's programs compiled, with its maps
// (the chain's array, and the slot it calls next, come at load).
struct EventPrograms::Built {
  pipeline::EventParts parts;
  std::map<std::string, int> maps;
  codegen::GeneratedUnit unit;  // its numbers are set at load
  std::string object;
  size_t maps_used = 0;
  bool attaches = false;
  bool chained = false;
};

}  // namespace histd::deploy
