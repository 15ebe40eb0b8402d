// SPDX-License-Identifier: GPL-2.0-only
#include "histd/codegen.h"

#include <fmt/format.h>

#include <algorithm>

#include <bit>

#include "codegen/emit.h"

namespace histd::codegen {

using plan::FieldAccess;
using plan::Source;

// Keys up to this size live on the trigger's stack frame; larger ones in the
// per-CPU key buffer.
constexpr uint32_t kStackKeyMax = 256;
constexpr uint32_t kNestedStackKeyMax = 64;
// Triggers inlined into one entry share its frame: their stacks add up
// (clang overlaps them, but need not). What is left of the 512 bytes is
// room for the entry's own locals (~40 bytes) and a string predicate's
// frame on top of it.
constexpr uint32_t kInlineStackBudget = 384;
constexpr uint32_t kTriggerFrameOverhead = 32;

namespace detail {

// `ts` reads common_timestamp on the trigger's clock.
std::string load_expr(const FieldAccess& a, const std::string& ts) {
  switch (a.source) {
    case Source::CommonPid:
      return "c->pid";
    case Source::CommonCpu:
      return "((__u64)bpf_get_smp_processor_id())";
    case Source::Timestamp:
      return ts;
    case Source::Hitcount:
      return "1";
    case Source::CurrentComm:  // strings and stacks never reach here
    case Source::Stacktrace:
    case Source::Record:
      break;
  }
  const char* sign = a.is_signed ? "S" : "U";
  return fmt::format("HISTD_LOAD_{}{}(rec, {}u)", sign, a.size * 8, a.offset);
}

// The mono-family clock is read once per event (c->ts); boot and tai where used.
std::string timestamp_expr(const plan::HistPlan& p) {
  switch (p.clock_source) {
    case plan::HistPlan::Clock::Mono:
      return "c->ts";
    case plan::HistPlan::Clock::Boot:
      return "bpf_ktime_get_boot_ns()";
    case plan::HistPlan::Clock::Tai:
      return "bpf_ktime_get_tai_ns()";
  }
  return "c->ts";
}

}  // namespace detail

namespace {

using detail::Emitter;
using detail::load_expr;
using detail::timestamp_expr;

// Copies a string field into key member k<k>, always leaving it terminated.
std::string string_key(size_t k, const plan::KeyField& key) {
  using catalog::FieldKind;
  if (key.access.source == Source::CurrentComm) return fmt::format("  histd_comm(c, key->k{}, 16);\n", k);
  if (key.access.kind == FieldKind::CharArray) {
    const uint32_t n = std::min(key.access.size, key.size - 1);
    return fmt::format("  __builtin_memcpy(key->k{}, (const char *)rec + {}u, {}u);\n", k, key.access.offset, n);
  }
  // __data_loc: a u32 (len << 16 | offset) locating the string in the
  // record; __rel_loc counts the offset from the end of the field.
  const uint32_t base = key.access.kind == FieldKind::RelString ? key.access.offset + key.access.size : 0;
  return fmt::format(
      "  {{\n    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {}u);\n"
      "    bpf_probe_read_kernel_str(key->k{}, {}u, (const char *)rec + {}u + (loc & 0xffff));\n  }}\n",
      key.access.offset, k, key.size, base);
}

// The kernel stack at the event, or a stack field's frames (after its
// frame count, as a synthetic long[] field holds them); unused frames stay
// zero.
std::string stack_key(size_t k, const plan::KeyField& key) {
  if (key.access.source == Source::Stacktrace)
    return fmt::format("  bpf_get_stack(ctx, key->k{}, sizeof(key->k{}), 0);\n", k, k);
  return fmt::format(
      "  {{\n    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {0}u);\n    __u32 n = loc >> 16;\n"
      "    if (n > 8) {{\n      n -= 8;\n      if (n > {2}u)\n        n = {2}u;\n"
      "      bpf_probe_read_kernel(key->k{1}, n, (const char *)rec + (loc & 0xffff) + 8);\n    }}\n  }}\n",
      key.access.offset, k, key.size);
}

void emit_types(std::string& out, size_t i, const plan::HistPlan& p) {
  // Hot slots compare and copy the key as u64 words, and the verifier
  // refuses misaligned stack access: a key of strings alone must be aligned.
  out += fmt::format("struct {}histd_key{} {{\n", p.hot_slots > 0 ? "__attribute__((aligned(8))) " : "", i);
  for (size_t k = 0; k < p.keys.size(); ++k) {
    const plan::KeyField& key = p.keys[k];
    const table::KeyHolds holds = table::key_traits(key.display).holds;
    if (holds == table::KeyHolds::String)
      out += fmt::format("  char k{}[{}];\n", k, key.size);
    else if (holds == table::KeyHolds::Stack)
      out += fmt::format("  __u64 k{}[{}];\n", k, key.size / 8);
    else
      out += fmt::format("  __u64 k{};\n", k);
  }
  out += "};\n";
  out += fmt::format("_Static_assert(sizeof(struct histd_key{}) == {}, \"key size\");\n", i, p.key_size);
  for (size_t k = 0; k < p.keys.size(); ++k)
    out += fmt::format("_Static_assert(__builtin_offsetof(struct histd_key{}, k{}) == {}, \"key offset\");\n", i, k,
                       p.keys[k].offset);
  out += fmt::format("struct histd_val{} {{\n  __u64 v[{}];\n", i, p.vals.size());
  if (p.saves_comm()) out += fmt::format("  char comm[{}];\n", plan::HistPlan::kCommSize);
  if (p.records_in_table()) out += fmt::format("  __u64 rec[{}];\n", (p.var_record_size + 7) / 8);
  out += "};\n";
  out += fmt::format("_Static_assert(sizeof(struct histd_val{}) == {}, \"value size\");\n", i, p.table_value_size());
  if (p.table_map == plan::TableMap::Log2Slots)
    out += fmt::format(
        "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, {});\n"
        "  __type(key, __u32);\n  __type(value, struct histd_val{});\n}} {} SEC(\".maps\");\n",
        p.table_map_entries(), i, table_map_name(i));
  else
    // One entry, as the variables' and references' maps: the engine's table,
    // made with the trigger's size=, replaces it at load, so triggers that
    // differ only in their size= are one text (one compile).
    out += fmt::format(
        "struct {{\n  __uint(type, {});\n  __uint(max_entries, 1);\n"
        "  __type(key, struct histd_key{});\n  __type(value, struct histd_val{});\n}} {} SEC(\".maps\");\n",
        p.per_cpu_table() ? "BPF_MAP_TYPE_PERCPU_HASH" : "BPF_MAP_TYPE_HASH", i, i, table_map_name(i));
  out += fmt::format(
      "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, 1);\n"
      "  __type(key, __u32);\n  __type(value, struct histd_table_stats);\n}} {} SEC(\".maps\");\n\n",
      stats_map_name(i));
  if (p.hot_slots > 0) {
    out += fmt::format("struct histd_hot{} {{\n  __u64 key[{}];\n  __u64 v[{}];\n  __u64 score;\n}};\n", i,
                       p.key_size / 8, p.vals.size());
    out += fmt::format("_Static_assert(sizeof(struct histd_hot{}) == {}, \"hot slot size\");\n", i, p.hot_value_size());
    out += fmt::format(
        "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, {});\n"
        "  __type(key, __u32);\n  __type(value, struct histd_hot{});\n}} {} SEC(\".maps\");\n\n",
        p.hot_slots, i, hot_map_name(i));
  }
  detail::emit_inter_event_types(out, i, p);
}

// Each key field into `key`: a string or stack copied, a number loaded and
// put through its modifier's computation (plan::KeyTransform).
std::string key_fields(const plan::HistPlan& p) {
  std::string out;
  for (size_t k = 0; k < p.keys.size(); ++k) {
    const plan::KeyField& key = p.keys[k];
    const table::KeyHolds holds = table::key_traits(key.display).holds;
    if (holds == table::KeyHolds::String) {
      out += string_key(k, key);
      continue;
    }
    if (holds == table::KeyHolds::Stack) {
      out += stack_key(k, key);
      continue;
    }
    std::string value = load_expr(key.access, timestamp_expr(p));
    switch (key.transform) {
      case plan::KeyTransform::None:
        break;
      case plan::KeyTransform::Log2:
        value = fmt::format("histd_log2({})", value);
        break;
      case plan::KeyTransform::Buckets:
        value = fmt::format("(({} / {}ULL) * {}ULL)", value, key.buckets, key.buckets);
        break;
      case plan::KeyTransform::Usecs:
        value = fmt::format("({} / 1000)", value);
        break;
    }
    out += fmt::format("  key->k{} = {};\n", k, value);
  }
  return out;
}

// What a trigger's body puts on the stack, over-counted: its key (when not
// in the per-CPU buffer), the table's and the variable record's initial
// values, each owner key cut to size, and a frame's worth of spills.
uint32_t trigger_stack_estimate(const plan::HistPlan& p, bool nested) {
  auto round8 = [](uint32_t n) { return (n + 7) / 8 * 8; };
  uint32_t bytes = kTriggerFrameOverhead;
  if (p.key_size <= (nested ? kNestedStackKeyMax : kStackKeyMax)) bytes += round8(p.key_size);
  if (p.table_map != plan::TableMap::Log2Slots) bytes += round8(p.table_value_size());
  if (p.separate_var_map()) bytes += round8(p.var_record_size);
  for (const plan::VarRef& r : p.refs)
    if (!r.self && r.owner_key_size != p.key_size) bytes += round8(r.owner_key_size);
  return bytes;
}

// Nested frames (a synthetic event's triggers inside the generating one)
// share the 512-byte stack: there, only small keys stay on it.
std::string key_storage(size_t i, const TriggerInput& in, bool nested) {
  if (in.plan->key_size <= (nested ? kNestedStackKeyMax : kStackKeyMax))
    return fmt::format("  struct histd_key{} key_storage;\n  struct histd_key{} *key = &key_storage;\n", i, i);
  return fmt::format(
      "  __u32 key_idx = {}u;\n  struct histd_key{} *key = bpf_map_lookup_elem(&histd_keys, &key_idx);\n"
      "  if (!key)\n    return;\n",
      in.depth, i);
}

// What each value column adds to its entry on this event.
std::vector<std::string> value_exprs(const plan::HistPlan& p) {
  std::vector<std::string> values;
  for (size_t k = 0; k < p.vals.size(); ++k) {
    std::string value =
        p.vals[k].expr ? detail::expr_code(*p.vals[k].expr, p) : load_expr(p.vals[k].access, timestamp_expr(p));
    if (p.vals[k].usecs && !p.vals[k].expr) value = fmt::format("({} / 1000)", value);
    values.push_back(std::move(value));
  }
  return values;
}

// `v`: the key's entry of table i, inserted when missing.
std::string entry_lookup(size_t i, const plan::HistPlan& p) {
  if (p.table_map == plan::TableMap::Log2Slots) {
    // Every slot exists: the lookup is a bounds check.
    return fmt::format(
        "  __u32 slot = (__u32)key->k0;\n  struct histd_val{} *v = bpf_map_lookup_elem(&{}, &slot);\n"
        "  if (!v)\n    return;\n",
        i, table_map_name(i));
  }
  // The initial value is only built on a miss: most events update an entry.
  std::string out =
      fmt::format("  struct histd_val{} *v = bpf_map_lookup_elem(&{}, key);\n  if (!v) {{\n", i, table_map_name(i));
  out += fmt::format("    struct histd_val{} init;\n    __builtin_memset(&init, 0, sizeof(init));\n", i);
  if (p.saves_comm()) out += "    histd_comm(c, init.comm, sizeof(init.comm));\n";
  out += fmt::format("    v = histd_insert_entry(&{}, key, &init, st);\n    if (!v)\n      return;\n  }}\n",
                     table_map_name(i));
  return out;
}

std::string value_updates(const plan::HistPlan& p, const std::vector<std::string>& values) {
  std::string out;
  for (size_t k = 0; k < values.size(); ++k) {
    // A shared table's entry is updated by every CPU at once.
    if (p.per_cpu_table())
      out += fmt::format("  v->v[{}] += {};\n", k, values[k]);
    else
      out += fmt::format("  __sync_fetch_and_add(&v->v[{}], {});\n", k, values[k]);
  }
  return out;
}

// `inlined`: the trigger's body is part of the entry's, not a subprogram
// of its own (a BPF-to-BPF call costs a few ns per event).
void emit_handler(Emitter& em, size_t i, const TriggerInput& in, bool nested, bool inlined) {
  const plan::HistPlan& p = *in.plan;
  std::string& out = em.body;
  const std::string filter = p.filter ? em.filter_expr(*p.filter, p.filter->root) : "";
  out += fmt::format("static {} void trigger_{}(void *ctx, const void *rec, const struct histd_common *c) {{\n",
                     inlined ? "__always_inline" : "__attribute__((noinline))", i);
  out += "  (void)ctx;\n  (void)rec;\n  (void)c;\n";
  // Its slot too: a trigger replaced by one that differs only in numbers
  // gets a new slot, and is still the same text.
  out += fmt::format("  if (histd_paused((__u32){}))\n    return;\n", em.number(in.control_slot));
  if (!filter.empty()) out += fmt::format("  if (!{})\n    return;\n", filter);
  const std::string stats =
      fmt::format("  struct histd_table_stats *st = histd_stats(&{});\n  if (!st)\n    return;\n", stats_map_name(i));
  // A trigger that reads another's variables asks for its statistics once
  // the event counts: one whose variable is not set for this key (most of a
  // run-queue latency's switches, for all but one of its triggers) returns
  // before. Others ask first, which keeps fewer values live across it.
  const bool reads_others = std::any_of(p.refs.begin(), p.refs.end(), [](const plan::VarRef& r) { return !r.self; });
  if (!reads_others) out += stats;
  out += key_storage(i, in, nested);
  out += "  __builtin_memset(key, 0, sizeof(*key));\n";
  out += key_fields(p);
  out += detail::emit_ref_reads(i, p);
  out += detail::emit_var_values(p);
  if (reads_others) out += stats;
  const std::vector<std::string> values = value_exprs(p);
  if (p.hot_slots > 0) out += detail::hot_hit(i, p, values);
  out += entry_lookup(i, p);
  out += value_updates(p, values);
  out += "  st->hits++;\n";
  if (p.hot_slots > 0) out += detail::hot_claim(i, p);
  out += detail::emit_var_store_and_actions(i, in);
  out += "}\n\n";
}

void emit_control(Emitter& em, size_t i, const ControlInput& in) {
  const std::string filter = in.filter ? em.filter_expr(*in.filter, in.filter->root) : "";
  em.body += detail::emit_control(i, in, filter);
}

// The unit's triggers are inlined into its entry when their stacks, added
// up, fit within kInlineStackBudget, or when there is only one: a
// BPF-to-BPF call per trigger and event is saved. Otherwise each is its own
// BPF subprogram, whose frames are reused across calls, so that many
// triggers' keys never add up against the limit. Enables and a traced
// record are subprograms whose frames sit on top of the entry's: with
// them, only a lone trigger beside a record is inlined.
bool inline_triggers(const std::vector<const TriggerInput*>& all, size_t controls, bool record, bool nested) {
  if (controls > 0) return false;
  if (all.size() == 1) return true;
  if (record) return false;
  uint32_t bytes = 0;
  for (const TriggerInput* t : all) bytes += trigger_stack_estimate(*t->plan, nested);
  return bytes <= kInlineStackBudget;
}

// Every trigger and enable of the unit, numbered: the event's own first.
struct UnitInputs {
  std::vector<const TriggerInput*> triggers;
  std::vector<const ControlInput*> controls;
};

UnitInputs unit_inputs(const std::vector<TriggerInput>& triggers, const std::vector<ControlInput>& enables,
                       const std::vector<InlinedEvent>& inlined) {
  UnitInputs u;
  for (const TriggerInput& t : triggers) u.triggers.push_back(&t);
  for (const ControlInput& e : enables) u.controls.push_back(&e);
  for (const InlinedEvent& ie : inlined) {
    for (const TriggerInput& t : ie.triggers) u.triggers.push_back(&t);
    for (const ControlInput& e : ie.controls) u.controls.push_back(&e);
  }
  return u;
}

std::string inlined_handler_declarations(size_t inlined) {
  std::string out;
  for (size_t j = 0; j < inlined; ++j)
    out += fmt::format(
        "static __always_inline void handle_s{}(void *ctx, const void *rec, const struct histd_common *c);\n", j);
  if (inlined > 0) out += "\n";
  return out;
}

std::string eprobe_filter_function(Emitter& em, const plan::TypedFilter& filter) {
  return "static __always_inline int eprobe_filter(const void *rec, const struct histd_common *c) {\n"
         "  (void)rec;\n  (void)c;\n  return " +
         em.filter_expr(filter, filter.root) + ";\n}\n\n";
}

bool any_control(const std::vector<const ControlInput*>& controls, parse::ControlCommand::Kind kind) {
  return std::any_of(controls.begin(), controls.end(), [kind](const ControlInput* c) { return c->kind == kind; });
}

bool any_eprobes(const std::vector<const TriggerInput*>& triggers) {
  return std::any_of(triggers.begin(), triggers.end(), [](const TriggerInput* t) {
    return std::any_of(t->synths.begin(), t->synths.end(), [](const SynthTarget& s) { return !s.eprobes.empty(); });
  });
}

// The kernel keeps enable triggers at the head of an event's trigger list
// and hist triggers at its tail: enables run first (it matters when one
// targets its own event).
std::string handler_calls(size_t first_enable, size_t enables_n, size_t first_trigger, size_t triggers_n) {
  std::string o;
  for (size_t k = 0; k < enables_n; ++k) o += fmt::format("  control_{}(ctx, rec, c);\n", first_enable + k);
  for (size_t k = 0; k < triggers_n; ++k) o += fmt::format("  trigger_{}(ctx, rec, c);\n", first_trigger + k);
  return o + "  (void)ctx;\n  (void)rec;\n  (void)c;\n}\n\n";
}

// handle_s<j> for each inlined event's triggers, then handle for the
// event's own.
std::string handlers(size_t triggers, size_t enables, const std::vector<InlinedEvent>& inlined, bool record) {
  std::string out;
  size_t first_trigger = triggers, first_enable = enables;
  for (size_t j = 0; j < inlined.size(); ++j) {
    out += fmt::format(
        "static __always_inline void handle_s{}(void *ctx, const void *rec, const struct histd_common *c) {{\n", j);
    out += handler_calls(first_enable, inlined[j].controls.size(), first_trigger, inlined[j].triggers.size());
    first_trigger += inlined[j].triggers.size();
    first_enable += inlined[j].controls.size();
  }
  out += "static __always_inline void handle(void *ctx, const void *rec, const struct histd_common *c) {\n";
  // The record is traced before the triggers run, as tracefs writes an
  // event to its buffer before the triggers that see it fire.
  if (record) out += "  record_event(ctx, rec, c);\n";
  out += handler_calls(0, enables, 0, triggers);
  return out;
}

// set_event_pid: whether the entries skip the event (bpf/hist_helpers.bpf.h).
// The pid fields are the record's, which the entry's ctx is.
std::string pid_check(const PidCheck& check) {
  std::string out =
      "static __always_inline int histd_pid_ignored(const void *rec) {\n"
      "  (void)rec;\n"
      // Its control word paused: no list in force.
      "  if (histd_paused(HISTD_PID_FILTER_SLOT))\n    return 0;\n";
  if (check.current) out += "  if (histd_pid_listed((__u32)bpf_get_current_pid_tgid()))\n    return 0;\n";
  for (uint32_t offset : check.pid_fields)
    out += fmt::format("  if (histd_pid_listed((__u32)HISTD_LOAD_S32(rec, {}u)))\n    return 0;\n", offset);
  return out + "  return 1;\n}\n\n";
}

// The unit's entry points, each told whether the unit reads the clock (ts)
// and common_pid (pid).
std::string entry_point(const EventEntry& entry, const std::vector<TriggerInput>& triggers,
                        const std::vector<const TriggerInput*>& all,
                        const std::vector<const ControlInput*>& all_controls, bool notices,
                        const plan::TypedFilter* eprobe_filter,
                        const std::optional<std::vector<detail::RecordRange>>& reads) {
  bool needs_ts = notices;
  for (const TriggerInput& t : triggers)
    needs_ts = needs_ts || (t.plan->uses_timestamp() && t.plan->clock_source == plan::HistPlan::Clock::Mono);
  const int ts = needs_ts ? 1 : 0;
  // Decided from the plans, never by searching the code just generated.
  bool reads_pid = notices;
  for (const TriggerInput* t : all) reads_pid = reads_pid || detail::reads_common_pid(*t->plan);
  for (const ControlInput* e : all_controls)
    reads_pid = reads_pid || (e->filter && detail::reads_common_pid(*e->filter));
  reads_pid = reads_pid || (eprobe_filter && detail::reads_common_pid(*eprobe_filter));
  reads_pid = reads_pid || any_eprobes(all);
  const int pid = reads_pid ? 1 : 0;
  std::string out;
  switch (entry.kind) {
    case EventEntry::Kind::Tracepoint:
      out += fmt::format("HISTD_EVENT_ENTRY(handle, {}, {})\n", ts, pid);
      break;
    case EventEntry::Kind::SyscallEnter:
      out += fmt::format("HISTD_SYSCALL_ENTER_ENTRY(handle, {}, {}, {})\n", ts, pid, entry.syscall_args);
      break;
    case EventEntry::Kind::SyscallExit:
      out += fmt::format("HISTD_SYSCALL_EXIT_ENTRY(handle, {}, {})\n", ts, pid);
      break;
    case EventEntry::Kind::Probe:
      out += detail::probe_entry(entry.probe, ts, pid);
      break;
    case EventEntry::Kind::Btf:
      out += detail::btf_entry(entry.btf, ts, pid, reads);
      break;
  }
  if (entry.test_entry) out += fmt::format("HISTD_TEST_ENTRY(handle, {})\n", ts);
  return out;
}

}  // namespace

std::string table_map_name(size_t trigger_index) { return fmt::format("tbl{}", trigger_index); }
std::string stats_map_name(size_t trigger_index) { return fmt::format("st{}", trigger_index); }
std::string hot_map_name(size_t trigger_index) { return fmt::format("hot{}", trigger_index); }

GeneratedUnit generate_event_unit(const std::vector<TriggerInput>& triggers, const std::vector<ControlInput>& enables,
                                  const std::vector<InlinedEvent>& inlined, EventEntry entry,
                                  const RecordInput* record) {
  using ControlKind = parse::ControlCommand::Kind;
  std::string out = std::string("/* Generated by histd. */\n") + kUnitPrelude;
  if (entry.chained) out += "#define HISTD_CHAINED 1\n";
  out += "#include \"chain.bpf.h\"\n\n";
  // After the blank line: not part of the prelude histd-cc precompiles.
  if (entry.kind == EventEntry::Kind::Btf) out += "#include \"btf_entry.bpf.h\"\n\n";
  const size_t head = out.size();
  const UnitInputs u = unit_inputs(triggers, enables, inlined);
  const bool nested = !inlined.empty();
  for (size_t i = 0; i < u.triggers.size(); ++i) emit_types(out, i, *u.triggers[i]->plan);
  out += inlined_handler_declarations(inlined.size());
  Emitter em;
  const bool inlined_triggers = inline_triggers(u.triggers, u.controls.size(), record != nullptr, nested);
  for (size_t i = 0; i < u.triggers.size(); ++i) emit_handler(em, i, *u.triggers[i], nested, inlined_triggers);
  for (size_t i = 0; i < u.controls.size(); ++i) emit_control(em, i, *u.controls[i]);
  const std::string record_filter =
      record && record->filter ? em.filter_expr(*record->filter, record->filter->root) : "";
  const plan::TypedFilter* eprobe_filter = entry.kind == EventEntry::Kind::Probe ? entry.probe.filter : nullptr;
  if (eprobe_filter) em.helpers += eprobe_filter_function(em, *eprobe_filter);
  const bool stacks = record || any_control(u.controls, ControlKind::Stacktrace);
  if (stacks) out += detail::emit_stack_buffer();
  // Recorded eprobes on a synthetic event a trigger generates are built in a buffer of their own.
  if (any_eprobes(u.triggers)) out += detail::emit_eprobe_buffer();
  if (!em.constants.empty())
    out += fmt::format("const volatile __u64 histd_k[{}] SEC(\"{}\") = {{0}};\n\n", em.constants.size(),
                       kConstantsSection);
  out += em.helpers;
  out += em.body;
  if (record) out += detail::emit_record(*record, record_filter);
  out += handlers(triggers.size(), enables.size(), inlined, record != nullptr);
  // A traced record, a stack and a snapshot notice carry their task and time.
  const bool notices = stacks || any_control(u.controls, ControlKind::Snapshot);
  out += pid_check(entry.pids);
  // A traced record is sent whole; otherwise a BTF-typed entry builds what is read.
  std::optional<std::vector<detail::RecordRange>> reads;
  if (!record) reads = detail::record_reads(triggers, enables, entry.pids);
  out += entry_point(entry, triggers, u.triggers, u.controls, notices, eprobe_filter, reads);
  if (entry.kind == EventEntry::Kind::Btf) return {std::move(out), std::move(em.constants), {}};
  std::string body = out.substr(head);
  std::vector<RecordField> fields = detail::lift_record_fields(body);
  out.resize(head);
  out += detail::record_struct(fields) + body;
  return {std::move(out), std::move(em.constants), std::move(fields)};
}

}  // namespace histd::codegen
