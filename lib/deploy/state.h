// SPDX-License-Identifier: GPL-2.0-only
// The deployer's kernel objects, shared by lib/deploy's .cpp files.
#pragma once

#include <linux/bpf.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hist_shared.h"
#include "histd/deploy.h"
#include "histd/parse.h"
#include "histd/plan.h"
#include "histd/runtime.h"
#include "histd/synth.h"
#include "histd/table_reader.h"

namespace histd::deploy {

using catalog::kSynthSystem;

// A trigger no other trigger or action depends on: it has no variables to
// reference, references none and fires nothing. A batch loads an event of
// these at its end; an attached tracepoint chains them (Deployer::layout).
inline bool plain(const plan::HistPlan& p) { return p.vars.empty() && p.refs.empty() && p.actions.empty(); }

// The BPF map behind a plan's table (plan::TableMap).
inline bpf_map_type table_map_type(const plan::HistPlan& p) {
  switch (p.table_map) {
    case plan::TableMap::PerCpuHash:
      break;
    case plan::TableMap::Log2Slots:
      return BPF_MAP_TYPE_PERCPU_ARRAY;
    case plan::TableMap::SharedHash:
    case plan::TableMap::SharedWithRecords:
      return BPF_MAP_TYPE_HASH;
  }
  return BPF_MAP_TYPE_PERCPU_HASH;
}

inline table::MapShape table_shape(const plan::HistPlan& p) {
  return {p.table_map == plan::TableMap::Log2Slots ? table::MapShape::Kind::Slots : table::MapShape::Kind::Hash,
          p.table_map_key_size(),
          p.table_map_entries(),
          p.per_cpu_table(),
          p.table_value_size(),
          p.hot_slots};
}

struct TableState {
  plan::HistPlan layout;  // the plan that created it: key/value sizes, entries
  Fd map;
  Fd stats;
  Fd hot;                // the hot slots in front of the map (layout.hot_slots > 0)
  std::string pin_base;  // "<pin_dir>/<id>" (+ "_table" / "_stats" / "_hot": bpffs refuses dots); empty when not pinned
  // Opened from pins a previous histd left: a command that fails after
  // adopting it (a restore whose compile fails) must leave the pins, and
  // with them the saved counts, for the next try.
  bool adopted = false;
  table::TableMaps fds() const { return {map.get(), stats.get(), hot ? hot.get() : -1}; }
  // Where its maps are pinned (empty when not pinned).
  std::vector<std::string> pin_paths() const {
    if (pin_base.empty()) return {};
    std::vector<std::string> paths{pin_base + "_table", pin_base + "_stats"};
    if (layout.hot_slots > 0) paths.push_back(pin_base + "_hot");
    return paths;
  }
};

struct Trigger {
  plan::HistPlan plan;
  // The kernel side of registry_'s trigger `uid` (its plan as deployed).
  uint64_t uid = 0;  // what other triggers' $references name it by
  std::shared_ptr<TableState> table;
  Fd vars;  // its variable records in a map of their own (plan.separate_var_map())
  // The map holding its variable records (-1: none): the table's when the
  // records follow the values there (plan::TableMap::SharedWithRecords).
  int record_map() const { return plan.records_in_table() ? table->map.get() : vars ? vars.get() : -1; }
  // The last snapshot() it took: the triggering value and the entry's key.
  struct Snapshot {
    uint64_t value = 0;
    std::vector<uint8_t> key;
  };
  std::optional<Snapshot> snapshot;
  uint32_t slot = 0;  // in the control array; its paused flag is the truth (BPF flips it too)
  // Unique for the deployer's life: which triggers a program holds is kept
  // by serial, never by address (a removed trigger's address comes back).
  uint64_t serial = 0;
  // Its program in the event's chain (EventState::groups), -1: the event
  // program. Set when a rebuild holding it succeeds.
  int group = -1;
  // Its event's missed count (Deployer::event_missed) when it was created or
  // last cleared: it missed what came after. Saved with it.
  uint64_t missed_base = 0;
};

// The kernel side of one of registry_'s enable_hist/disable_hist triggers
// (the command and filter its event's program is built from).
struct DeployedControl {
  parse::ControlCommand cmd;
  std::optional<plan::TypedFilter> filter;
  uint32_t slot = 0;
};

// A program of an event's chain (docs/design/bpf.md, "Program chains"): up to
// Options::triggers_per_program triggers, in chain slot
// (its index + 1), run after the event program by a tail call.
struct ProgramGroup {
  std::vector<uint64_t> members;  // the serials of what `program` counts (none: it only passes on)
  std::unique_ptr<Kernel::Program> program;
  std::string source;  // of `program`
  size_t maps_used = 0;
  // In a batch: the members last compiled (end_batch() loads them).
  std::vector<uint64_t> built;
};

struct EventState {
  std::string system;
  std::string event;
  std::vector<std::unique_ptr<Trigger>> triggers;          // in creation order
  std::vector<std::unique_ptr<DeployedControl>> controls;  // newest first, as the kernel lists them
  std::unique_ptr<Kernel::Attachment> attachment;
  // Set with `attachment` when it is on the raw sys_enter / sys_exit
  // tracepoint: the event program must then be generated for that entry.
  std::optional<catalog::SyscallEvent> syscall;
  // Set with `attachment` when it is on the tracepoint BTF-typed: the
  // programs must then be generated with that entry (pipeline::btf_entry).
  std::optional<codegen::BtfEntry> btf;
  // The event program: its controls, its record, the triggers that are not
  // plain; all of its triggers when it has no chain (a probe, an event run
  // only through the test entry). Slot 0 of the dispatcher's array, or, when
  // there is no such program, the first group's is there too.
  std::unique_ptr<Kernel::Program> program;
  std::vector<uint64_t> program_triggers;  // the serials of what `program` counts
  std::string source;                      // of `program`
  std::vector<ProgramGroup> groups;
  size_t maps_used = 0;  // by `program` (runtime::maps_used_per_program), of kMaxMapsPerProgram
  // In a batch: `program` is behind its triggers, end_batch() loads theirs.
  bool deferred = false;
  // Its `enable` file is 1 (a kernel event's records go to the trace
  // buffer), and how many enable_event/disable_event triggers target it
  // (the kernel's soft mode: they turn its recording on and off from BPF).
  bool enabled = false;
  uint32_t soft_refs = 0;
  // While either holds, its program copies each record to the ring (even
  // with no trigger on it) unless this control slot is paused.
  std::optional<uint32_t> record_slot;
  // Its `filter` file (registry::RecordFilter): the records recorded; and
  // the one before the command being deployed, which a roll back restores.
  std::optional<plan::TypedFilter> record_filter;
  std::optional<plan::TypedFilter> record_filter_before;
  bool recorded() const { return enabled || soft_refs > 0; }
};

using Events = std::map<catalog::EventId, std::unique_ptr<EventState>>;

// A trigger by uid among `events`, with its event; {nullptr, nullptr} when gone.
inline std::pair<EventState*, Trigger*> find_trigger_in(const Events& events, uint64_t uid) {
  for (const auto& [id, ev] : events)
    for (const auto& t : ev->triggers)
      if (t->uid == uid) return {ev.get(), t.get()};
  return {nullptr, nullptr};
}

// An event among `events`; null when the deployer never had it.
inline const EventState* find_event_in(const Events& events, const catalog::EventId& event) {
  auto it = events.find(event);
  return it == events.end() ? nullptr : it->second.get();
}

// The event's triggers and controls as EventPrograms::rebuild takes them.
inline std::vector<Trigger*> triggers_of(EventState& ev) {
  std::vector<Trigger*> out;
  for (auto& t : ev.triggers) out.push_back(t.get());
  return out;
}
inline std::vector<DeployedControl*> controls_of(EventState& ev) {
  std::vector<DeployedControl*> out;
  for (auto& e : ev.controls) out.push_back(e.get());
  return out;
}

// The events `ev`'s programs missed since its dispatcher was attached (0
// for an event without one), and what a trigger on it shows.
inline uint64_t event_missed(const EventState& ev) {
  return (ev.attachment ? ev.attachment->missed() : 0) + (ev.program ? ev.program->missed() : 0);
}
inline uint64_t trigger_missed(const EventState& ev, const Trigger& t) {
  const uint64_t now = event_missed(ev);
  return now >= t.missed_base ? now - t.missed_base : now;
}

// A snapshot() notice from control slot `slot` (TraceRing::Notices, in
// ring_notices.cpp): whether the trigger of that slot takes the snapshot,
// which it then records.
bool snapshot_notice(const Events& events, uint32_t slot, uint64_t value, std::span<const uint8_t> key);

// The kernel side of one of the registry's synthetic events.
struct SynthState {
  synth::SynthDefinition def;
  uint32_t id = 0;          // its records' common_type
  uint32_t slot = 0;        // control slot: paused when nothing wants its records
  uint32_t trace_slot = 0;  // paused unless its records go to the trace buffer
  bool enabled = false;     // as deployed: its trace slot follows it
};

}  // namespace histd::deploy
