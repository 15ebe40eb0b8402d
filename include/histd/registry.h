// The registry: histd's logical state as a pure, copyable value — which
// triggers exist on which event (their plans, pause flags, the field
// variables made for them), the enable_hist/disable_hist triggers, the
// synthetic events — and the decisions about it: what a command does to it,
// or why it is refused. No BPF, no file descriptors, no root: the engine's
// deployer carries out what apply() decided (issue 20, point 1), and the
// unit tests check the decisions without a kernel.
#pragma once

#include <cstdint>
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
#include "histd/result.h"
#include "histd/synth.h"

namespace histd::registry {

// The limits the registry enforces, and what sizes tables: plain values the
// engine copies from its options (engine::EngineOptions) and the machine.
struct Options {
  size_t max_triggers = 1024;
  size_t max_synthetic_events = 1024;
  uint64_t max_map_memory = uint64_t{256} << 20;
  uint32_t possible_cpus = 1;  // per-CPU maps hold a value per possible CPU
  uint64_t percpu_table_limit = uint64_t{16} << 20;
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

struct EnableTrigger {
  parse::EnableHistCommand cmd;
  std::optional<plan::TypedFilter> filter;
  std::string config;
  friend bool operator==(const EnableTrigger&, const EnableTrigger&) = default;
};

struct EventTriggers {
  std::vector<HistTrigger> hist;        // in creation order
  std::vector<EnableTrigger> enables;   // newest first, as the kernel lists them
  bool empty() const { return hist.empty() && enables.empty(); }
  friend bool operator==(const EventTriggers&, const EventTriggers&) = default;
};

struct Synthetic {
  synth::SynthDefinition def;
  uint32_t id = 0;  // its records' common_type
  bool enabled = false;
  bool config = false;  // defined by the configuration directory
  friend bool operator==(const Synthetic&, const Synthetic&) = default;
};

// ---- commands: what the front doors parsed, once ----
// A write to events/<system>/<event>/trigger; `config` is recorded on the
// trigger it creates.
struct TriggerWrite {
  catalog::EventId event;
  parse::TriggerCommand command;
  std::string config;
};
// Opening the trigger file with O_TRUNC.
struct TriggerTruncate {
  catalog::EventId event;
};
// Removing one trigger by what it is (a listed line, the configuration's
// own): hist trigger `uid`, or the enable/disable_hist `enable` names.
// `command` is what a refusal logs: the trigger's printed line.
struct TriggerRemove {
  catalog::EventId event;
  uint64_t uid = 0;
  std::optional<parse::EnableHistCommand> enable;
  std::string command;
};
// One line of a synthetic_events write (the lines before a failing one stay
// applied, as in the kernel: the caller applies them one by one).
struct SynthWrite {
  synth::SynthCommand command;
  bool config = false;
};
struct SynthTruncate {};
// events/synthetic/<name>/enable.
struct SynthEnable {
  std::string name;
  bool on = false;
};
using Command = std::variant<TriggerWrite, TriggerTruncate, TriggerRemove, SynthWrite, SynthTruncate, SynthEnable>;

// One thing the deployer must carry out, in order.
struct Change {
  enum class Kind {
    TriggerAdded,      // event, uid
    TriggerRemoved,    // event, uid
    TriggerPaused,     // event, uid
    TriggerContinued,  // event, uid
    TriggerCleared,    // event, uid
    EventTruncated,    // event: every hist and enable trigger of it, at once
    EnableAdded,       // event, enable (its identity)
    EnableRemoved,     // event, enable
    SynthDefined,      // synth
    SynthRemoved,      // synth
    SynthEnabled,      // synth
    SynthDisabled,     // synth
  };
  Kind kind = Kind::TriggerAdded;
  catalog::EventId event;
  uint64_t uid = 0;
  std::optional<parse::EnableHistCommand> enable;
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
  const std::map<catalog::EventId, EventTriggers>& events() const { return events_; }
  const EventTriggers* triggers(const catalog::EventId& event) const;
  const std::map<std::string, Synthetic>& synthetics() const { return synths_; }
  // The trigger with this uid and its event (nullptr: none).
  std::pair<const catalog::EventId*, const HistTrigger*> find(uint64_t uid) const;
  // What planning a trigger consults: the variables, the synthetic events.
  plan::Registry planning() const;
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

  // Restoring a saved trigger: its pause flag and configuration mark, which
  // commands do not carry. Unknown uid: no change.
  void set_saved(uint64_t uid, bool paused, std::string config);

  friend bool operator==(const Registry&, const Registry&) = default;

 private:
  friend struct Work;
  const catalog::Catalog* catalog_ = nullptr;
  Options options_;
  std::map<catalog::EventId, EventTriggers> events_;
  std::map<std::string, plan::HistPlan> named_;  // named tables' layouts, while used
  std::map<std::string, Synthetic> synths_;
  uint64_t next_uid_ = 1;
  uint32_t next_synth_id_ = 0xf000;
};

struct Applied {
  Registry next;
  std::vector<Change> changes;
};

}  // namespace histd::registry
