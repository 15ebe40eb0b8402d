// SPDX-License-Identifier: GPL-2.0-only
// The registry: histd's logical state as a pure, copyable value — which
// triggers exist on which event (their plans, pause flags, the field
// variables made for them), the enable_hist/disable_hist triggers, the
// synthetic events — and the decisions about it: what a command does to it,
// or why it is refused. No BPF, no file descriptors, no root: the engine's
// deployer carries out what apply() decided, and the
// unit tests check the decisions without a kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "histd/catalog.h"
#include "histd/diagnostic.h"
#include "histd/parse.h"
#include "histd/plan.h"
#include "histd/plan_memory.h"
#include "histd/probe.h"
#include "histd/result.h"
#include "histd/synth.h"

namespace histd::registry {

// The limits the registry enforces, and what sizes tables: plain values the
// engine copies from its options (engine::EngineOptions) and the machine.
// What a tree may hold: a command that would go past a limit is refused
// (ENOSPC, an error_log entry) before it creates anything.
struct Limits {
  // Triggers alive at once, across events: hist triggers (with the field
  // variables histd makes for onmatch() params), enable_hist/disable_hist
  // and enabled events.
  size_t max_triggers = 1024;
  // Synthetic events defined at once (each takes two control slots, apart
  // from the triggers').
  size_t max_synthetic_events = 1024;
  // Bytes of BPF map memory for the triggers' tables, stats and variable
  // maps, as plan::map_memory() computes them (a shared named table counts
  // once).
  uint64_t max_map_memory = uint64_t{256} << 20;
  // A table that as a per-CPU hash would take more than this many bytes is
  // kept in one hash shared by all CPUs (plan::TableMap::SharedHash;
  // docs/design/limits.md, "Per-CPU or shared").
  uint64_t percpu_table_limit = uint64_t{16} << 20;
  friend bool operator==(const Limits&, const Limits&) = default;
};

struct Options {
  Limits limits;
  // What other trees (instances) that draw on the same max_map_memory hold.
  uint64_t map_memory_elsewhere = 0;
  uint32_t possible_cpus = 1;  // per-CPU maps hold a value per possible CPU
  friend bool operator==(const Options&, const Options&) = default;
};

struct HistTrigger {
  uint64_t uid = 0;  // what other triggers' $references name it by
  plan::HistPlan plan;
  bool paused = false;        // as commanded (BPF's enable_hist flips the kernel's flag too)
  uint64_t field_var_of = 0;  // made to carry a field to that trigger's onmatch() (0: the user's own)
  std::string config;         // the command the configuration directory declared it with ("": a user's)
  friend bool operator==(const HistTrigger&, const HistTrigger&) = default;
};

struct ControlTrigger {
  parse::ControlCommand cmd;
  std::optional<plan::TypedFilter> filter;
  std::string config;
  friend bool operator==(const ControlTrigger&, const ControlTrigger&) = default;
};

struct EventTriggers {
  std::vector<HistTrigger> hist;         // in creation order
  std::vector<ControlTrigger> controls;  // newest first, as the kernel lists them
  bool empty() const { return hist.empty() && controls.empty(); }
  friend bool operator==(const EventTriggers&, const EventTriggers&) = default;
};

struct Synthetic {
  synth::SynthDefinition def;
  uint32_t id = 0;  // its records' common_type
  bool enabled = false;
  bool config = false;  // defined by the configuration directory
  friend bool operator==(const Synthetic&, const Synthetic&) = default;
};

// An eprobe histd defined itself (dynamic_events' e:): an event computed
// from each record of a kernel tracepoint.
struct Eprobe {
  probe::Define def;
  std::optional<plan::TypedFilter> filter;  // def.filter, typed against the attached event
  uint32_t id = 0;                          // its records' common_type
  friend bool operator==(const Eprobe&, const Eprobe&) = default;
};

// ---- commands: what the front doors parsed, once ----
// The longest command a user writes (a page), and a line histd printed
// itself (a saved trigger, a listed line: defaults spelled out).
inline constexpr size_t kMaxCommandBytes = parse::kMaxCommandBytes;
inline constexpr size_t kMaxPrintedCommandBytes = parse::kMaxPrintedCommandBytes;
// A write to events/<system>/<event>/trigger; `config` is recorded on the
// trigger it creates.
struct TriggerWrite {
  catalog::EventId event;
  parse::TriggerCommand command;
  std::string config;
  // Whether the writer may see kernel addresses (root, or as kptr_restrict
  // allows): if not, plan::PlanContext::opaque_addresses.
  bool may_see_addresses = true;
  // The write's one parse: its text (shorter than `max_bytes`) as a
  // command, or the diagnostic the user sees.
  static Result<TriggerWrite, Diagnostic> parse(catalog::EventId event, std::string_view text, size_t max_bytes,
                                                std::string config);
  // The command as error_log shows it ("hist:..." and the rest).
  const std::string& logged() const;
};
// Opening the trigger file with O_TRUNC.
struct TriggerTruncate {
  catalog::EventId event;
};
// Removing one trigger by what it is (a listed line, the configuration's
// own): hist trigger `uid`, or the control trigger of `control`'s type.
// `command` is what a refusal logs: the trigger's printed line.
struct TriggerRemove {
  catalog::EventId event;
  uint64_t uid = 0;
  std::optional<parse::ControlCommand> control;
  std::string command;
};
// One line of a synthetic_events write (the lines before a failing one stay
// applied, as in the kernel: the caller applies them one by one).
struct SynthWrite {
  synth::SynthCommand command;
  bool config = false;
  static Result<SynthWrite, Diagnostic> parse(std::string_view line, bool config);
};
struct SynthTruncate {};
// events/synthetic/<name>/enable.
struct SynthEnable {
  std::string name;
  bool on = false;
};
// events/<system>/<event>/enable or set_event for a kernel event: whether
// its records go to the trace buffer (a synthetic event's is SynthEnable).
struct EventEnable {
  catalog::EventId event;
  bool on = false;
};
// What a user's command cannot say of a trigger: a restored one's pause
// flag as saved, a declared one's pause flag and words (a reworded
// declaration of the same trigger keeps it and its counts).
struct TriggerMark {
  uint64_t uid = 0;
  bool paused = false;
  std::string config;
};
// One dynamic_events line for histd's eprobes (e:, or -: naming one):
// define or remove one.
struct ProbeWrite {
  probe::ProbeCommand command;
  static Result<ProbeWrite, Diagnostic> parse(std::string_view line);
};
// Every eprobe (dynamic_events opened with O_TRUNC), or none if one is busy.
struct ProbeTruncate {};
// events/<system>/<event>/filter: which of its records are recorded, in the
// kernel's filter language ("0" or nothing: every record). The text is
// what error_log shows as the command, the caret placed in it.
struct EventFilter {
  catalog::EventId event;
  std::string text;
};
// events/<system>/filter: the filter set on every event of the system that
// has the fields it names, the others' filters cleared, as the kernel's
// apply_subsystem_event_filter(); refused when no event has them.
struct SystemFilter {
  std::string system;
  std::string text;
};
using Command = std::variant<TriggerWrite, TriggerTruncate, TriggerRemove, SynthWrite, SynthTruncate, SynthEnable,
                             TriggerMark, EventEnable, ProbeWrite, ProbeTruncate, EventFilter, SystemFilter>;

// An event's filter as set: its text (what the filter file shows) and the
// filter typed against the event's format (what the recording tests).
struct RecordFilter {
  std::string text;
  plan::TypedFilter typed;
  friend bool operator==(const RecordFilter&, const RecordFilter&) = default;
};

// One thing the deployer must carry out, in order.
struct Change {
  enum class Kind {
    TriggerAdded,      // event, uid
    TriggerRemoved,    // event, uid
    TriggerPaused,     // event, uid
    TriggerContinued,  // event, uid
    TriggerCleared,    // event, uid
    EventTruncated,    // event: every hist and enable trigger of it, at once
    ControlAdded,      // event, control (its identity)
    ControlRemoved,    // event, control
    SynthDefined,      // synth
    SynthRemoved,      // synth
    SynthEnabled,      // synth
    SynthDisabled,     // synth
    EventEnabled,      // event: a kernel event's records go to the trace buffer
    EventDisabled,     // event
    ProbeDefined,      // event: one of histd's eprobes
    ProbeRemoved,      // event
    EventFiltered,     // event: its filter set or cleared (Registry::filters)
  };
  Kind kind = Kind::TriggerAdded;
  catalog::EventId event;
  uint64_t uid = 0;
  std::optional<parse::ControlCommand> control;
  std::string synth;
  // What the deployer reports a failure of this change with: the logged
  // command that made it (a field variable's own), and for a field
  // variable the onmatch() param it carries (where the caret goes).
  std::string command;
  std::string param;
  friend bool operator==(const Change&, const Change&) = default;
};

// Why a command is refused: a diagnostic for the user's text (logged on the
// command's event) or an errno-kind error (ENOENT, EBUSY: no error_log entry).
struct Refusal {
  std::optional<Diagnostic> diagnostic;
  Error error;
  // error_log entries a refused implicit field variable left on its own
  // event first, as a command there would have (before `diagnostic`).
  std::vector<std::pair<catalog::EventId, Diagnostic>> logged_on;
  // The matching events a field variable was tried on before the refusal:
  // a command ran there, whose hist file no longer shows an older error.
  std::vector<catalog::EventId> tried_on;
};

class Registry;
struct Applied;

class Registry {
 public:
  // `catalog` says which events exist and their formats; it must outlive
  // the registry and its copies. Synthetic events come from the registry.
  Registry(const catalog::Catalog& catalog, Options options);

  // The next registry and what changes, or why not. Never changes *this.
  Result<Applied, Refusal> apply(const Command& command) const;

  // ---- queries ----
  const Options& options() const { return options_; }
  // Options::map_memory_elsewhere, as other trees hold it now.
  void set_map_memory_elsewhere(uint64_t bytes) { options_.map_memory_elsewhere = bytes; }
  const std::map<catalog::EventId, EventTriggers>& events() const { return events_; }
  const EventTriggers* triggers(const catalog::EventId& event) const;
  const std::map<std::string, Synthetic>& synthetics() const { return synths_; }
  const std::map<catalog::EventId, Eprobe>& eprobes() const { return eprobes_; }
  // An eprobe is busy while it has triggers or is enabled (the kernel's
  // eprobe_dyn_event_is_busy()): it cannot be removed.
  bool probe_in_use(const catalog::EventId& event) const;
  // An eprobe on a synthetic event: recorded where that event is
  // generated; it takes no triggers (yet).
  bool eprobe_on_synthetic(const catalog::EventId& event) const;
  // The kernel events whose records go to the trace buffer.
  const std::set<catalog::EventId>& enabled_events() const { return enabled_; }
  // The events whose filter file holds a filter.
  const std::map<catalog::EventId, RecordFilter>& filters() const { return filters_; }
  // The trigger with this uid and its event (nullptr: none).
  std::pair<const catalog::EventId*, const HistTrigger*> find(uint64_t uid) const;
  // What planning a trigger consults: the variables, the synthetic events.
  plan::PlanContext planning() const;
  // The layout of named table `name` (the plan that created it); nullptr: none.
  const plan::HistPlan* named_layout(const std::string& name) const;
  // "system:event" of a trigger (not in `going`) that references a variable
  // of a trigger in `going`.
  std::optional<std::string> referenced_by(const std::set<uint64_t>& going) const;
  bool synth_in_use(const std::string& name) const;
  // Whether synthetic event `from` generates `to`, directly or down a chain.
  bool synth_reaches(const std::string& from, const std::string& to) const;
  // The event's format: a synthetic event's from its definition, else the catalog's.
  Expected<std::shared_ptr<const catalog::EventFormat>> format(const catalog::EventId& event) const;
  bool exists(const catalog::EventId& event) const;
  catalog::EventSource source(const catalog::EventId& event) const;
  // Triggers alive (hist and enable); map memory (shared tables once).
  size_t trigger_count() const;
  uint64_t map_memory() const;
  uint64_t next_uid() const { return next_uid_; }

  // A hist trigger's identity, as triggers match (plan::encode of its
  // plan::TriggerKey): equal for every spelling of the same trigger.
  static std::string identity(const HistTrigger& t);
  // The identity `text` would have as a trigger of `event` if written now
  // (planned with the catalog and the registry's variables, no side
  // effect); "" when it is not a hist trigger or cannot be planned now.
  std::string identity_of(const catalog::EventId& event, std::string_view text) const;

  friend bool operator==(const Registry&, const Registry&) = default;

 private:
  friend struct Work;
  // lib/registry/probes.cpp
  Result<Applied, Refusal> apply_probe(const ProbeWrite& w) const;
  Result<Applied, Refusal> apply_probe_truncate() const;
  // lib/registry/filters.cpp
  Result<Applied, Refusal> apply_filter(const EventFilter& f) const;
  Result<Applied, Refusal> apply_system_filter(const SystemFilter& f) const;
  // Whether an eprobe can be attached as `d` says, and its filter typed
  // against the attached event; or why not: no such event, not a kernel
  // tracepoint, no such field, a bad filter (the error where it points).
  Result<std::optional<plan::TypedFilter>, Refusal> check_attached(const probe::Define& d,
                                                                   const std::string& command) const;
  const catalog::Catalog* catalog_ = nullptr;
  Options options_;
  std::map<catalog::EventId, EventTriggers> events_;
  std::map<std::string, plan::HistPlan> named_;  // named tables' layouts, while used
  std::map<std::string, Synthetic> synths_;
  std::map<catalog::EventId, Eprobe> eprobes_;
  std::set<catalog::EventId> enabled_;
  std::map<catalog::EventId, RecordFilter> filters_;
  uint64_t next_uid_ = 1;
  uint32_t next_synth_id_ = 0xf000;
  // Apart from the synthetic events' ids, which a restart hands out again
  // in the same order whatever eprobes came between.
  uint32_t next_eprobe_id_ = 0xe000;
};

struct Applied {
  Registry next;
  std::vector<Change> changes;
};

// ---- the state file: the registry in the form that restores it ----
// One entry of the state file: a synthetic event's definition, a trigger
// (hist or enable_hist/disable_hist), or a synthetic event's enable state.
// A restart applies them in order, as commands.
// set_event_pid as saved: its pids, whether options/event-fork follows
// their forks, and the boot they are of (/proc/sys/kernel/random/boot_id):
// after a reboot the same numbers name other tasks.
struct SavedPids {
  std::string boot_id;
  std::vector<uint32_t> pids;
  bool event_fork = false;
  friend bool operator==(const SavedPids&, const SavedPids&) = default;
};

struct SavedEntry {
  // Enabled: a synthetic event's enable state; EventEnabled: a kernel event's;
  // Eprobe: one of histd's eprobes (its dynamic_events line); EventFilter:
  // an event's filter (the command is its text); EventPids: set_event_pid
  // and options/event-fork (`pids`).
  enum class Kind { Synthetic, Trigger, Enabled, EventEnabled, Eprobe, EventFilter, EventPids };
  Kind kind = Kind::Trigger;
  // "system:event" (Trigger, EventEnabled), the synthetic event's name (Enabled)
  std::string event;
  std::string command;  // the saved line
  bool paused = false;
  uint64_t missed_base = 0;  // where its Missed count starts, as saved
  std::string raw;           // the entry as saved (JSON), written back when it cannot be applied
  // The command as the configuration directory declared it (Trigger), or
  // the event's name (Synthetic): the entry is the configuration's.
  std::string config;
  // While it does not restore: why, and whether it is being retried (its
  // own save must not list it twice).
  std::string reason;
  bool applying = false;
  std::optional<SavedPids> pids;  // EventPids
};

// What only the kernel side knows of a registry, which a save records.
struct KernelFacts {
  std::function<bool(uint64_t uid)> paused;           // the control word's flag (BPF flips it too)
  std::function<uint64_t(uint64_t uid)> missed_base;  // on the event's pinned counter
  // An enable_hist/disable_hist with the count it has left.
  std::function<std::string(const catalog::EventId&, const ControlTrigger&)> control_line;
  // set_event_pid (BPF changes it too, following forks): none while no
  // list is in force and options/event-fork is off. Null: none.
  std::function<std::optional<SavedPids>()> event_pids;
};

// The state file's text (JSON, version 1): the synthetic events, the hist
// triggers in creation order (a trigger's $references need their owners
// first), the enable triggers oldest first, the enabled synthetic and
// kernel events, the events' filters, set_event_pid;
// then `kept` — entries saved before that did not restore — as they were
// saved, in their order.
std::string saved_text(const Registry& registry, const KernelFacts& kernel, const std::vector<SavedEntry>& kept);
// A state file's entries in the order to apply them, or why the text is not
// a state file this histd reads (the caller keeps such a file aside).
Result<std::vector<SavedEntry>, std::string> read_saved(std::string_view text);

}  // namespace histd::registry
