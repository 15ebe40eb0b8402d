// SPDX-License-Identifier: GPL-2.0-only
// Stage 3, plan: AST + catalog -> HistPlan, the typed IR every later stage
// reads. All semantic errors are raised here, with the span of the offending
// token. Pure.
//
// Layout rules follow the kernel's tracing_map: every key field occupies an
// 8-byte-aligned slot (numbers as u64, sign-extended for signed fields);
// value slot 0 is the hitcount, then one u64 per value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "histd/catalog.h"
#include "histd/diagnostic.h"
#include "histd/parse.h"
#include "histd/result.h"
#include "histd/synth.h"
#include "histd/table.h"

namespace histd::plan {

// Where a field's value comes from at run time.
enum class Source {
  Record,       // the event record, at FieldAccess::offset
  CommonPid,    // the current thread id (the record's first 8 bytes are unreadable)
  CommonCpu,    // the CPU the event ran on
  Timestamp,    // common_timestamp, ns
  Hitcount,     // the implicit counter (values only)
  CurrentComm,  // common_comm / comm: the current task's comm (a char[16])
  Stacktrace,   // common_stacktrace / stacktrace: 16 kernel frames
};

struct FieldAccess {
  Source source = Source::Record;
  uint32_t offset = 0;  // in the record
  uint32_t size = 8;    // in the record
  bool is_signed = false;
  catalog::FieldKind kind = catalog::FieldKind::Integer;
  uint32_t array_len = 0;
  std::string type;             // the C type, as hist_debug shows it
  bool kernel_address = false;  // catalog::Field::kernel_address
  friend bool operator==(const FieldAccess&, const FieldAccess&) = default;
};

// How a key's stored value is derived from the field's (modifier::modifiers()).
using modifier::KeyTransform;

struct KeyField {
  std::string name;     // printed in the hist line: "call_site"
  std::string printed;  // printed in the trigger line: "call_site.sym"
  FieldAccess access;
  KeyTransform transform = KeyTransform::None;
  uint64_t buckets = 0;
  uint32_t offset = 0;  // in the key struct
  uint32_t size = 8;    // in the key struct
  table::KeyDisplay display = table::KeyDisplay::Decimal;
  friend bool operator==(const KeyField&, const KeyField&) = default;
};

// ---- expressions -----------------------------------------------------------

// How a division by a constant is done: the kernel's choices, whose results
// differ (MultShift can be one too large), so they are reproduced.
enum class DivStrategy { Runtime, Shift, MultShift, Plain };

struct ExprOp {
  enum class Kind { Field, Constant, Ref, Add, Sub, Mul, Div, Negate };
  Kind kind = Kind::Constant;
  FieldAccess access;  // Field (numeric)
  bool usecs = false;  // Field: common_timestamp.usecs (ns / 1000)
  uint64_t constant = 0;
  int ref = -1;  // Ref: index into HistPlan::refs
  int lhs = -1;
  int rhs = -1;
  DivStrategy div = DivStrategy::Runtime;  // Div
  uint64_t divisor = 0;                    // Div by a constant
  friend bool operator==(const ExprOp&, const ExprOp&) = default;
};

// A typed numeric expression, or a plain string field (is_string).
struct TypedExpr {
  std::vector<ExprOp> ops;
  int root = -1;
  std::string text;          // as the kernel prints it: "common_timestamp.usecs-$ts0", "2"
  std::string type = "u64";  // C type, for synthetic event params: the first operand's
  uint32_t size = 8;
  bool is_signed = false;
  bool usecs = false;      // carries common_timestamp.usecs units
  bool timestamp = false;  // reads common_timestamp
  bool is_string = false;  // a string field (`string_field` says where), or a string variable's value
  bool is_stack = false;   // common_stacktrace, or a stack variable's value
  FieldAccess string_field;
  int blob_ref = -1;            // a string or stack variable's value: its reference in the plan's refs
  bool kernel_address = false;  // reads a kernel address (FieldAccess::kernel_address) or a variable that does
  bool is_constant() const {
    return !is_string && root >= 0 && ops.at(static_cast<size_t>(root)).kind == ExprOp::Kind::Constant;
  }
  friend bool operator==(const TypedExpr&, const TypedExpr&) = default;
};

// The kernel's u64 arithmetic, for constant folding (and tests).
uint64_t divide(uint64_t x, uint64_t d, DivStrategy how);
DivStrategy div_strategy(uint64_t constant_divisor);

struct ValField {
  std::string name;     // "bytes_req"
  std::string printed;  // "bytes_req.hex"
  FieldAccess access;
  table::ValDisplay display = table::ValDisplay::Decimal;
  bool usecs = false;             // common_timestamp.usecs
  std::optional<TypedExpr> expr;  // a computed value (an expression or a variable's)
  friend bool operator==(const ValField&, const ValField&) = default;
};

// ---- inter-event -------------------------------------------------------------

// A variable of this trigger: one u64 slot per table entry, in the shared
// variable map keyed like the table; a string or stack variable also has
// bytes of its own after every slot (docs/design/inter-event.md, "Variable records").
inline constexpr uint32_t kStringVarSize = 256;  // the kernel's STR_VAR_LEN_MAX
inline constexpr uint32_t kStackVarSize = 256;   // a frame count and 31 frames, as histd's long[] fields
struct Variable {
  std::string name;
  TypedExpr expr;
  uint32_t slot = 0;         // u64 index in the entry's variable record (after the set mask)
  uint32_t blob_offset = 0;  // bytes into the record of a string or stack variable's bytes
  uint32_t blob_size = 0;    // 0: a number
  friend bool operator==(const Variable&, const Variable&) = default;
};

// A $reference: another trigger's variable, looked up in its owner's
// variable map with this event's key, or this trigger's own.
struct VarRef {
  std::string system;  // the owner's event
  std::string event;
  std::string name;
  uint64_t owner = 0;  // the engine's id of the owning trigger (0: self)
  bool self = false;
  uint32_t slot = 0;                 // in the owner's variable record
  uint32_t owner_key_size = 0;       // the owner's key, which this key must match
  uint32_t owner_record_size = 0;    // bytes of the owner's variable record
  uint32_t owner_record_offset = 0;  // where it starts in the owner's map value
  bool read_once = false;            // an operand of an expression: consumed when read
  uint32_t blob_offset = 0;          // a string or stack variable's bytes in the owner's record
  uint32_t blob_size = 0;            // 0: a number
  bool owner_sole_var = false;       // the owner's only variable: its set bit is the record's only one
  friend bool operator==(const VarRef&, const VarRef&) = default;
};

// The variable that carries a field of an onmatch() matching event to the
// generating trigger ("sched.sched_waking.prio" -> "synthetic_prio"), as the
// kernel names its implicit field variables.
inline constexpr std::string_view kFieldVarPrefix = "synthetic_";

// A variable other triggers can reference, as the engine's registry lists it.
struct RegisteredVar {
  std::string system;
  std::string event;
  std::string name;
  uint64_t owner = 0;
  uint32_t slot = 0;
  uint32_t key_size = 0;
  uint32_t record_size = 0;
  uint32_t record_offset = 0;  // in the owner's map value (HistPlan::record_offset)
  uint32_t blob_offset = 0;    // Variable::blob_offset, blob_size
  uint32_t blob_size = 0;
  bool sole = false;  // HistPlan::sole_variable of the owner
  TypedExpr type;     // ops empty: only the type facts (type, size, signedness, usecs, string)
};

// How a trigger's entries are kept in BPF, chosen by the planner.
enum class TableMap {
  // A per-CPU hash keyed by the key struct, max_entries entries.
  PerCpuHash,
  // A lone .log2 key (65 possible values): a per-CPU array indexed by it; a
  // bounds check and an add instead of a hash lookup (bench: 1.5x before).
  Log2Slots,
  // A hash shared by all CPUs, values added atomically: a table that as a
  // per-CPU hash would take more than TablePolicy::percpu_limit bytes (every
  // update moves a cache line: bench/shared.sh, 2.4x the per-CPU cost).
  SharedHash,
  // A trigger with variables (or onmax/onchange tracking) keeps each entry's
  // variable record after its values, in one hash shared by all CPUs (the
  // record must be, decision 6): one lookup per event finds both, as the
  // kernel keeps both in one tracing_map element, and clearing the table
  // clears the variables as the kernel's does. Named tables, which other
  // triggers share, keep their records in a map of their own.
  SharedWithRecords,
};

// Hot slots: a per-CPU array of `hot_slots` entries in front of a per-CPU
// hash table, each holding one key and that CPU's values for it; an event
// whose key owns its slot adds there instead of in the hash (bench: a count
// 84 -> 59 ns in-kernel). The rules, and why counts stay exact: docs/design/bpf.md,
// "Hot slots".
inline constexpr uint32_t kHotSlotsMax = 256;
inline constexpr uint32_t kHotKeyMax = 64;  // bytes: longer keys cost more to compare than they save
// A slot's standing: a claim starts at kHotStart, a hit of the resident adds
// one (up to kHotMax), another key's event takes one; at 0 that key wins it.
inline constexpr uint32_t kHotStart = 2;
inline constexpr uint32_t kHotMax = 8;

// What the per-CPU or shared choice depends on besides the plan.
struct TablePolicy {
  uint32_t possible_cpus = 1;
  uint64_t percpu_limit = uint64_t{16} << 20;
};

// What planning a trigger may consult besides its event's format.
struct PlanContext {
  std::vector<RegisteredVar> vars;
  std::vector<synth::SynthDefinition> synths;
  const catalog::Catalog* catalog = nullptr;  // onmatch(system.event) must name an event
  TablePolicy tables;
  // The writer may not see kernel addresses (kptr_restrict): a command that
  // would compare, order, compute with or copy one is refused
  // (ErrorCode::AddressHidden); keys and plain values stay allowed, and
  // render hidden to such readers.
  bool opaque_addresses = false;
};

// A value an action writes into a synthetic event's field.
struct ActionParam {
  std::string text;  // as written
  TypedExpr value;   // numeric, or a string field
  synth::SynthField target;
  friend bool operator==(const ActionParam&, const ActionParam&) = default;
};

// A field save() keeps beside the tracked maximum.
struct SavedField {
  std::string name;
  FieldAccess access;
  bool is_string = false;
  uint32_t offset = 0;  // bytes into the entry's variable record
  uint32_t size = 8;
  friend bool operator==(const SavedField&, const SavedField&) = default;
};

struct ActionPlan {
  parse::Action::Handler handler = parse::Action::Handler::OnMatch;
  parse::Action::Kind kind = parse::Action::Kind::Trace;
  std::string match_system;  // onmatch
  std::string match_event;
  int track_var = -1;         // onmax/onchange: index into HistPlan::vars
  std::string track_text;     // "$wakeup_lat"
  uint32_t track_offset = 0;  // bytes into the entry's variable record
  std::string synth;          // Trace: the synthetic event generated
  std::vector<ActionParam> params;
  std::vector<SavedField> saves;
  std::string printed;  // as the trigger line prints it, without the leading ':'
  friend bool operator==(const ActionPlan&, const ActionPlan&) = default;
};

struct SortKey {
  table::SortColumn column;
  std::string printed;  // "bytes_req.descending", "hitcount"
  friend bool operator==(const SortKey&, const SortKey&) = default;
};

// One position of a glob: a byte, any byte, or a class of bytes.
struct GlobAtom {
  enum class Kind { Literal, Any, Class };
  Kind kind = Kind::Literal;
  uint8_t byte = 0;                                 // Literal
  bool negated = false;                             // Class: [!...]
  std::vector<std::pair<uint8_t, uint8_t>> ranges;  // Class: inclusive ranges
  friend bool operator==(const GlobAtom&, const GlobAtom&) = default;
};

// A string comparison compiled for BPF: the pattern split at '*' into
// fixed-length segments (an exact match: one, no stars), matched first at
// the start (unless leading_star), last at the end (unless trailing_star),
// the others in order between (leftmost first: exact for fixed lengths).
struct StringMatch {
  std::vector<std::vector<GlobAtom>> segments;
  bool leading_star = false;
  bool trailing_star = false;
  friend bool operator==(const StringMatch&, const StringMatch&) = default;
};

// Compiles a filter glob (`*`, `?`, `[abc]`, `[a-z]`, `[!...]`) as the
// kernel's glob_match() reads it; an unterminated '[' is a literal.
StringMatch compile_glob(std::string_view pattern);
// An exact comparison with `text`.
StringMatch exact_match(std::string_view text);

// A type-checked filter, flat like parse::Filter.
struct FilterTerm {
  enum class Kind { Compare, And, Or, Not };
  Kind kind = Kind::Compare;
  FieldAccess field;  // Compare
  parse::CompareOp op = parse::CompareOp::Eq;
  uint64_t constant = 0;   // truncated to the field's width, sign-extended if signed
  bool is_string = false;  // string field: `match` decides, op is Eq, Ne or Glob
  StringMatch match;
  int lhs = -1;
  int rhs = -1;
  friend bool operator==(const FilterTerm&, const FilterTerm&) = default;
};

struct TypedFilter {
  std::vector<FilterTerm> terms;
  int root = -1;
  friend bool operator==(const TypedFilter&, const TypedFilter&) = default;
};

struct HistPlan {
  std::string system;
  std::string event;
  std::vector<KeyField> keys;
  uint32_t key_size = 0;
  std::vector<ValField> vals;  // vals[0] is hitcount
  std::vector<SortKey> sort;   // never empty: defaults to hitcount ascending
  uint32_t max_entries = 2048;
  TableMap table_map = TableMap::PerCpuHash;
  static constexpr uint32_t kLog2Slots = 65;
  uint32_t hot_slots = 0;           // a power of two; 0: none (choose_hot_slots)
  std::optional<std::string> name;  // named table
  // The trace clock of common_timestamp ("global" by default) and the BPF
  // helper that reads it.
  std::string clock = "global";
  enum class Clock { Mono, Boot, Tai } clock_source = Clock::Mono;
  bool nohitcount = false;
  std::optional<TypedFilter> filter;
  std::string filter_text;  // verbatim, printed after " if "
  parse::Control control = parse::Control::None;
  bool remove = false;

  std::vector<Variable> vars;
  std::vector<VarRef> refs;
  std::vector<ActionPlan> actions;
  // Bytes of the entry's variable record: a set mask, the variables, the
  // tracked values and saved fields of onmax/onchange. 0: no variable map.
  uint32_t var_record_size = 0;
  bool has_var_map() const { return var_record_size > 0; }
  // The record's set mask has one bit: it is set and cleared by plain
  // stores, as the kernel's tracing_map does var_set, with no bit of
  // another variable beside it for another CPU to be setting.
  bool sole_variable() const { return vars.size() == 1; }

  // The trigger line as the trigger file prints it, without " [active]".
  std::string trigger_text() const;
  // The trigger text without its size: names a trigger's own pinned table
  // (Engine::pin_base), so it must not change. Triggers match by TriggerKey.
  std::string identity() const;
  // The table's column layout, without rows.
  table::Table columns() const;
  // An .execname key keeps the comm of the task that created each entry
  // after the u64 values.
  bool saves_comm() const;
  // Any field reads common_timestamp: the trigger line then shows the clock.
  bool uses_timestamp() const;
  static constexpr uint32_t kCommSize = 16;
  uint32_t value_size() const { return static_cast<uint32_t>(vals.size() * 8) + (saves_comm() ? kCommSize : 0); }
  bool per_cpu_table() const { return table_map != TableMap::SharedHash && table_map != TableMap::SharedWithRecords; }
  bool records_in_table() const { return table_map == TableMap::SharedWithRecords; }
  // Variable records in a hash of their own (the "var<i>" map).
  bool separate_var_map() const { return has_var_map() && !records_in_table(); }
  // Where the variable record starts in its map's value: after the values
  // in the table's entry, at 0 in a map of its own.
  uint32_t record_offset() const { return records_in_table() ? (value_size() + 7) / 8 * 8 : 0; }
  // The table map's value: the values (and comm), then the record when kept there.
  uint32_t table_value_size() const {
    return records_in_table() ? record_offset() + (var_record_size + 7) / 8 * 8 : value_size();
  }
  // The BPF map's key size and entries (the hashes' are the key struct's and
  // max_entries; Log2Slots' a u32 index and kLog2Slots).
  uint32_t table_map_key_size() const { return table_map == TableMap::Log2Slots ? 4 : key_size; }
  uint32_t table_map_entries() const { return table_map == TableMap::Log2Slots ? kLog2Slots : max_entries; }
  // A hot slot: the key, one u64 per value, the standing (a u64).
  uint32_t hot_value_size() const { return key_size + static_cast<uint32_t>(vals.size() * 8) + 8; }
  // Two plans may share a named table when their layouts agree.
  bool table_compatible(const HistPlan& other) const;

  friend bool operator==(const HistPlan&, const HistPlan&) = default;
};

// How a reader who may not see kernel addresses is shown a value (a
// column, a tracked or saved value): a kernel address as a pointer, else
// as its C type says (table::address_kind).
table::AddressKind address_kind(const FieldAccess& field);
table::AddressKind address_kind(const TypedExpr& value);

// Why a writer who may not see kernel addresses is refused a use of `name`
// (ErrorCode::AddressHidden's detail).
std::string hidden_address_use(std::string_view name);

// Whether an onmax()/onchange() action keeps values per entry.
inline bool tracks_values(const HistPlan& p) {
  for (const ActionPlan& a : p.actions)
    if (a.handler != parse::Action::Handler::OnMatch) return true;
  return false;
}

Result<HistPlan, Diagnostic> plan_hist(const parse::HistCommand& command, const catalog::EventFormat& format,
                                       const PlanContext& context = {});

// ---- trigger identity and implicit field variables ----------------------------

// What makes two hist triggers of an event one ('!' removes it, a new one
// "already exists"), as the kernel's hist_trigger_match(): the name, key and
// value fields (by name and modifier, as the kernel compares hist_field
// names and flags; expressions as printed), variables, sort keys, the
// filter's text and the actions, but not the size nor pause/cont/clear.
// histd also compares the clock when a field reads common_timestamp.
struct TriggerKey {
  struct Key {
    std::string name;  // the field: "call_site"
    KeyTransform transform = KeyTransform::None;
    uint64_t buckets = 0;
    table::KeyDisplay display = table::KeyDisplay::Decimal;
    friend bool operator==(const Key&, const Key&) = default;
  };
  std::string system;
  std::string event;
  std::optional<std::string> name;
  std::vector<Key> keys;
  std::vector<std::string> vals;  // as printed: "bytes_req.hex", "common_timestamp.usecs-$ts0"
  bool nohitcount = false;
  std::vector<std::pair<std::string, std::string>> vars;  // name, expression as printed
  std::vector<table::SortColumn> sort;
  std::string clock;                  // "" unless a field reads common_timestamp
  std::vector<std::string> actions;   // as printed: "onmatch(sys.ev).trace(e,$x)"
  std::optional<std::string> filter;  // its text
  friend bool operator==(const TriggerKey&, const TriggerKey&) = default;
};
TriggerKey trigger_key(const HistPlan& plan);

// Variable `v` of a trigger planned as `plan`, registered for the triggers
// planned after it (`owner`: the registry's id of that trigger).
RegisteredVar registered_var(const HistPlan& plan, const Variable& v, uint64_t owner);
// The key as a string, equal for two keys exactly when they are equal: for
// those that compare triggers without this header (the configuration
// directory, through engine::ConfigItems::identity). Every string is written
// with its length, so no text a user wrote can make two keys meet.
std::string encode(const TriggerKey& key);

// An onmatch() param naming a field of the matching event
// ("sched.sched_waking.prio"), which the kernel carries in an implicit
// variable ("synthetic_prio") on a histogram it creates there.
struct FieldVarNeed {
  std::string system;  // the matching event
  std::string event;
  std::string field;  // "prio"
  std::string name;   // "synthetic_prio"
  std::string param;  // as written, where errors point
};
// Those `command` (on system:event) needs and `context` lacks, each once,
// in the order written; none for a removal or pause/cont/clear.
std::vector<FieldVarNeed> field_var_needs(const parse::HistCommand& command, std::string_view system,
                                          std::string_view event, const PlanContext& context);
// The trigger carrying one, keyed like `model` (a histogram of the matching
// event, whose `format` this is) under its filter, as the kernel's
// create_field_var_hist(); `command` is what the kernel would log for it
// ("hist:keys=<model's keys>:synthetic_prio=prio if <filter>"): diagnostics only.
struct FieldVarTrigger {
  parse::HistCommand command;
  HistPlan plan;
};
Result<FieldVarTrigger, Diagnostic> plan_field_var(const FieldVarNeed& need, const HistPlan& model,
                                                   const catalog::EventFormat& format, const PlanContext& context = {});

// Types a filter against an event's format (for commands other than hist
// that carry a filter, e.g. enable_hist). `command` goes into diagnostics;
// `opaque_addresses` as PlanContext::opaque_addresses.
Result<TypedFilter, Diagnostic> plan_filter(const parse::Filter& filter, const catalog::EventFormat& format,
                                            std::string_view command, bool opaque_addresses = false);

// Human-readable dump of a plan, for `histctl explain`.
std::string describe(const HistPlan& plan);

// The field sections of the kernel's hist_debug output for one trigger
// (from "  n_vals:" on), plus histd's own layout lines.
std::string debug_fields(const HistPlan& plan);

}  // namespace histd::plan
