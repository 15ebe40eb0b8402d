// SPDX-License-Identifier: GPL-2.0-only
// What the engine's reads return: data, never text. The engine copies what
// it holds into these values (tables read from their maps, trigger lines
// with their state, the error log's entries, an event's debug facts); each
// front end hands them to the renderer it wants (render: the kernel's text,
// JSON; a metrics exporter would be one more renderer over the same values).
// Types only: the engine fills them, lib/render reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "histd/diagnostic.h"
#include "histd/plan.h"
#include "histd/plan_memory.h"
#include "histd/table.h"

namespace histd::readout {

// Where a trigger stands. An enable_hist/disable_hist is always Active (the
// kernel prints no state for it).
enum class TriggerState { Active, Paused, NotRestored };

// One trigger, as the trigger file, `histctl list` and `histctl list --json`
// show it.
struct TriggerInfo {
  std::string system;
  std::string event;
  // The trigger as histd prints it (plan::HistPlan::trigger_text(), the
  // enable_hist line, or the saved command of one that did not restore),
  // without the state the listings add after it.
  std::string line;
  bool hist = true;  // false: enable_hist/disable_hist, which have no maps
  TriggerState state = TriggerState::Active;
  std::string not_restored;  // NotRestored: why (the trigger has no maps then)
  bool config = false;       // the configuration directory's (engine::ConfigItem), not a user's
  // Engine::trigger_info() only (Engine::trigger_lines() leaves them empty):
  plan::MapMemory memory;     // its maps by the formula (a shared table under each of its triggers)
  std::string shared_table;   // the named table it shares; "" when its maps are its own
  uint32_t table_map_id = 0;  // kernel ids of its maps (0: none)
  uint32_t stats_map_id = 0;
  uint32_t vars_map_id = 0;
  uint32_t hot_map_id = 0;
};

// The last snapshot an onmax()/onchange() .snapshot() took: its value and the
// key (bytes) of the entry that took it.
struct SnapshotTaken {
  uint64_t value = 0;
  std::vector<uint8_t> key;
};

// One hist trigger's table as it was read.
struct HistTable {
  // The trigger's plan: its printed line, and the layout of the variable
  // records that onmax()/onchange() keep (what the renderer prints after
  // each entry) and of the snapshot block.
  plan::HistPlan plan;
  bool paused = false;
  // The entries, with each entry's variable record (Table::set_record) when
  // `tracked`.
  table::Table table;
  bool tracked = false;
  plan::MapMemory memory;  // plan::map_memory
  // Events the kernel's BPF recursion guard kept from the trigger since it
  // was created or cleared.
  uint64_t missed = 0;
  std::optional<SnapshotTaken> snapshot;
};

// An event's hist file as data: its tables in trigger order, and the error
// of the last command on the event that failed (shown below the tables).
struct EventHist {
  std::string system;
  std::string event;
  std::vector<HistTable> tables;
  std::optional<Diagnostic> last_error;
};

// What hist_debug shows of one trigger.
struct DebugTable {
  plan::HistPlan plan;
  bool paused = false;
  uint32_t table_map_id = 0;  // stands where the kernel prints the hist_data pointer
  plan::MapMemory memory;
  std::string shared_table;  // the named table, when another trigger shares it
  uint64_t missed = 0;       // since the trigger began
  // The program holding it: 0 the event program, N the N-th of the event's
  // chain (its plain triggers, a few to a program), with that program's
  // maps and triggers.
  uint32_t chain_slot = 0;
  size_t program_maps = 0;
  size_t program_triggers = 0;
};

// An event's hist_debug as data.
struct EventDebug {
  std::string system;
  std::string event;
  std::vector<DebugTable> tables;
  uint32_t possible_cpus = 1;
  // How the event's program is attached: on its tracepoint, on the raw
  // sys_enter/sys_exit tracepoint for system call `raw_syscall_nr`, or not.
  bool attached = false;
  // The tracepoint it runs at ("system:event"): its own, or an eprobe's
  // attached event.
  std::string tracepoint;
  std::optional<int> raw_syscall_nr;
  bool raw_syscall_exit = false;
  bool btf_typed = false;       // on its tracepoint BTF-typed (tp_btf), the record built from the arguments
  size_t maps_used = 0;         // by the fullest of the event's programs
  size_t max_maps = 0;          // one program may use (engine::kMaxMapsPerProgram)
  size_t chained_programs = 0;  // after the event program
  uint64_t event_missed = 0;    // since the event was attached
};

// One entry of error_log: a rejected command with its diagnostic, or a note
// of histd's own (a dependent event it could not update).
struct ErrorLogEntry {
  // CLOCK_MONOTONIC when it was logged, printed as tracefs prints it.
  uint64_t seconds = 0;
  uint32_t microseconds = 0;
  std::string location;  // "hist:sys:event", "synthetic_events", "file:line"
  std::optional<Diagnostic> diagnostic;
  std::string note;  // without a diagnostic: the whole line, '\n' included, no timestamp
};

}  // namespace histd::readout
