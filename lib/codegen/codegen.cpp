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

using detail::load_expr;
using detail::timestamp_expr;

const char* compare_op(parse::CompareOp op) {
  switch (op) {
    case parse::CompareOp::Eq:
      return "==";
    case parse::CompareOp::Ne:
      return "!=";
    case parse::CompareOp::Lt:
      return "<";
    case parse::CompareOp::Le:
      return "<=";
    case parse::CompareOp::Gt:
      return ">";
    case parse::CompareOp::Ge:
      return ">=";
    case parse::CompareOp::BitAnd:
    case parse::CompareOp::Glob:
      break;
  }
  return "==";
}

// One glob position at index expression `index` of b->s.
std::string atom_expr(const plan::GlobAtom& atom, const std::string& index) {
  const std::string ch = fmt::format("b->s[{}]", index);
  switch (atom.kind) {
    case plan::GlobAtom::Kind::Literal:
      return fmt::format("({} == 0x{:02x})", ch, atom.byte);
    case plan::GlobAtom::Kind::Any:
      return "1";
    case plan::GlobAtom::Kind::Class:
      break;
  }
  std::string any;
  for (const auto& [lo, hi] : atom.ranges) {
    if (!any.empty()) any += " || ";
    any += lo == hi ? fmt::format("{} == 0x{:02x}", ch, lo) : fmt::format("({} >= 0x{:02x} && {} <= 0x{:02x})", ch, lo, ch, hi);
  }
  if (any.empty()) any = "0";
  return atom.negated ? fmt::format("!({})", any) : fmt::format("({})", any);
}

// All atoms of a segment at `base` (an expression) + their position.
std::string segment_expr(const std::vector<plan::GlobAtom>& seg, const std::string& base, bool masked) {
  std::string e;
  for (size_t m = 0; m < seg.size(); ++m) {
    if (!e.empty()) e += " && ";
    const std::string index = masked ? fmt::format("(({} + {}u) & (HISTD_STR_MAX * 2 - 1))", base, m)
                                     : fmt::format("{}", m);
    e += atom_expr(seg[m], index);
  }
  return e.empty() ? "1" : e;
}

// Collects the unit's parts: helper functions come before the handlers that call them.
class Emitter {
 public:
  std::string helpers;
  std::string body;

  // The operands of a run of `kind` terms, left to right, joined by `op`
  // (both operators are associative, and C evaluates the flat chain in the
  // same order as the nested one).
  void chain(const plan::TypedFilter& f, int index, plan::FilterTerm::Kind kind, const char* op, std::string& out) {
    const plan::FilterTerm& t = f.terms.at(static_cast<size_t>(index));
    if (t.kind != kind) {
      if (!out.empty()) out += op;
      out += filter_expr(f, index);
      return;
    }
    chain(f, t.lhs, kind, op, out);
    chain(f, t.rhs, kind, op, out);
  }

  std::string filter_expr(const plan::TypedFilter& f, int index) {
    const plan::FilterTerm& t = f.terms.at(static_cast<size_t>(index));
    switch (t.kind) {
      case plan::FilterTerm::Kind::And:
      case plan::FilterTerm::Kind::Or: {
        // A chain of one operator is one flat parenthesis: a page of
        // `a && b && ...` nested pair by pair passes clang's bracket limit (256).
        std::string out;
        chain(f, index, t.kind, t.kind == plan::FilterTerm::Kind::And ? " && " : " || ", out);
        return "(" + out + ")";
      }
      case plan::FilterTerm::Kind::Not:
        return fmt::format("(!{})", filter_expr(f, t.lhs));
      case plan::FilterTerm::Kind::Compare:
        break;
    }
    if (t.is_string) return fmt::format("strpred_{}(rec, c)", string_predicate(t));
    const std::string value = load_expr(t.field);
    const std::string constant = fmt::format("0x{:x}ULL", t.constant);
    if (t.op == parse::CompareOp::BitAnd) return fmt::format("(({} & {}) != 0)", value, constant);
    if (t.field.is_signed) return fmt::format("((__s64){} {} (__s64){})", value, compare_op(t.op), constant);
    return fmt::format("({} {} {})", value, compare_op(t.op), constant);
  }

 private:
  size_t next_predicate_ = 0;

  // Emits strpred_<n>(): copies the string to the per-CPU buffer and matches it.
  size_t string_predicate(const plan::FilterTerm& t) {
    const size_t n = next_predicate_++;
    const bool negate = t.op == parse::CompareOp::Ne;
    const std::string no = negate ? "1" : "0";
    const std::string yes = negate ? "0" : "1";
    std::string& o = helpers;
    o += fmt::format("static __attribute__((noinline)) int strpred_{}(const void *rec, const struct histd_common *c) {{\n", n);
    o += "  (void)rec;\n  (void)c;\n  struct histd_str *b = histd_str_buf();\n  if (!b)\n    return 0;\n";
    o += load_string(t.field);
    o += "  __u32 len = histd_strlen(b);\n  __u32 pos = 0, end = len;\n  (void)pos;\n  (void)end;\n";
    const plan::StringMatch& m = t.match;
    size_t total = 0;
    for (const auto& seg : m.segments) total += seg.size();
    o += fmt::format("  if (len < {}u)\n    return {};\n", total, no);
    size_t first = 0, last = m.segments.size();  // [first, last) are searched
    const bool exact = !m.leading_star && !m.trailing_star && m.segments.size() <= 1;
    if (exact) {
      o += fmt::format("  if (len != {}u)\n    return {};\n", total, no);
      if (!m.segments.empty()) o += fmt::format("  if (!({}))\n    return {};\n", segment_expr(m.segments[0], "0", false), no);
      o += fmt::format("  return {};\n}}\n\n", yes);
      return n;
    }
    if (!m.leading_star && !m.segments.empty()) {
      o += fmt::format("  if (!({}))\n    return {};\n  pos = {}u;\n", segment_expr(m.segments[0], "0", false), no,
                       m.segments[0].size());
      first = 1;
    }
    if (!m.trailing_star && last > first) {
      const auto& seg = m.segments[last - 1];
      o += fmt::format("  end = len - {}u;\n  if (!({}))\n    return {};\n", seg.size(), segment_expr(seg, "end", true), no);
      --last;
    }
    for (size_t k = first; k < last; ++k) {
      const auto& seg = m.segments[k];
      o += fmt::format(
          "  {{\n    int found = 0;\n    __u32 p;\n    for (p = pos; p < HISTD_STR_MAX; p++) {{\n"
          "      if (p + {}u > end)\n        break;\n      if ({}) {{\n        found = 1;\n        break;\n      }}\n    }}\n"
          "    if (!found)\n      return {};\n    pos = histd_forget(&b->pos, p + {}u);\n  }}\n",
          seg.size(), segment_expr(seg, "p", true), no, seg.size());
    }
    o += fmt::format("  return {};\n}}\n\n", yes);
    return n;
  }

  static std::string load_string(const FieldAccess& a) {
    using catalog::FieldKind;
    if (a.source == Source::CurrentComm) return "  histd_comm(c, b->s, 16);\n";
    if (a.kind == FieldKind::CharArray)
      return fmt::format("  __builtin_memcpy(b->s, (const char *)rec + {}u, {}u);\n", a.offset,
                         std::min<uint32_t>(a.size, 256));
    const uint32_t base = a.kind == FieldKind::RelString ? a.offset + a.size : 0;
    return fmt::format(
        "  {{\n    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {}u);\n"
        "    bpf_probe_read_kernel_str(b->s, HISTD_STR_MAX, (const char *)rec + {}u + (loc & 0xffff));\n  }}\n",
        a.offset, base);
  }
};

// Copies a string field into key member k<k>, always leaving it terminated.
std::string string_key(size_t k, const plan::KeyField& key) {
  using catalog::FieldKind;
  if (key.access.source == Source::CurrentComm)
    return fmt::format("  histd_comm(c, key->k{}, 16);\n", k);
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

void emit_types(std::string& out, size_t i, const plan::HistPlan& p) {
  // Hot slots compare and copy the key as u64 words, and the verifier
  // refuses misaligned stack access: a key of strings alone must be aligned.
  out += fmt::format("struct {}histd_key{} {{\n", p.hot_slots > 0 ? "__attribute__((aligned(8))) " : "", i);
  for (size_t k = 0; k < p.keys.size(); ++k) {
    const plan::KeyField& key = p.keys[k];
    if (key.display == table::KeyDisplay::String)
      out += fmt::format("  char k{}[{}];\n", k, key.size);
    else if (key.display == table::KeyDisplay::Stacktrace)
      out += fmt::format("  __u64 k{}[{}];\n", k, key.size / 8);
    else
      out += fmt::format("  __u64 k{};\n", k);
  }
  out += "};\n";
  out += fmt::format("_Static_assert(sizeof(struct histd_key{}) == {}, \"key size\");\n", i, p.key_size);
  for (size_t k = 0; k < p.keys.size(); ++k)
    out += fmt::format("_Static_assert(__builtin_offsetof(struct histd_key{}, k{}) == {}, \"key offset\");\n", i,
                       k, p.keys[k].offset);
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
    out += fmt::format(
        "struct {{\n  __uint(type, {});\n  __uint(max_entries, {});\n"
        "  __type(key, struct histd_key{});\n  __type(value, struct histd_val{});\n}} {} SEC(\".maps\");\n",
        p.per_cpu_table() ? "BPF_MAP_TYPE_PERCPU_HASH" : "BPF_MAP_TYPE_HASH", p.max_entries, i, i,
        table_map_name(i));
  out += fmt::format(
      "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, 1);\n"
      "  __type(key, __u32);\n  __type(value, struct histd_table_stats);\n}} {} SEC(\".maps\");\n\n",
      stats_map_name(i));
  if (p.hot_slots > 0) {
    out += fmt::format("struct histd_hot{} {{\n  __u64 key[{}];\n  __u64 v[{}];\n  __u64 score;\n}};\n", i,
                       p.key_size / 8, p.vals.size());
    out += fmt::format("_Static_assert(sizeof(struct histd_hot{}) == {}, \"hot slot size\");\n", i,
                       p.hot_value_size());
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
    if (key.display == table::KeyDisplay::String) {
      out += string_key(k, key);
      continue;
    }
    if (key.display == table::KeyDisplay::Stacktrace) {
      // The kernel stack at the event; unused frames stay zero.
      out += fmt::format("  bpf_get_stack(ctx, key->k{}, sizeof(key->k{}), 0);\n", k, k);
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

// `alone`: the unit's only trigger, inlined into the entry (a BPF-to-BPF
// call costs a few ns per event; with one trigger there is no frame to share).
void emit_handler(Emitter& em, size_t i, const TriggerInput& in, bool nested, bool alone) {
  const plan::HistPlan& p = *in.plan;
  std::string& out = em.body;
  const std::string filter = p.filter ? em.filter_expr(*p.filter, p.filter->root) : "";
  out += fmt::format("static {} void trigger_{}(void *ctx, const void *rec, const struct histd_common *c) {{\n",
                     alone ? "__always_inline" : "__attribute__((noinline))", i);
  out += "  (void)ctx;\n  (void)rec;\n  (void)c;\n";
  out += fmt::format("  if (histd_paused({}u))\n    return;\n", in.control_slot);
  if (!filter.empty()) out += fmt::format("  if (!{})\n    return;\n", filter);
  out += fmt::format("  struct histd_table_stats *st = histd_stats(&{});\n  if (!st)\n    return;\n",
                     stats_map_name(i));
  // Nested frames (a synthetic event's triggers inside the generating one)
  // share the 512-byte stack: there, only small keys stay on it.
  if (p.key_size <= (nested ? kNestedStackKeyMax : kStackKeyMax)) {
    out += fmt::format("  struct histd_key{} key_storage;\n  struct histd_key{} *key = &key_storage;\n", i, i);
  } else {
    out += fmt::format(
        "  __u32 key_idx = {}u;\n  struct histd_key{} *key = bpf_map_lookup_elem(&histd_keys, &key_idx);\n"
        "  if (!key)\n    return;\n", in.depth, i);
  }
  out += "  __builtin_memset(key, 0, sizeof(*key));\n";
  out += key_fields(p);
  out += detail::emit_ref_reads(i, p);
  out += detail::emit_var_values(p);
  std::vector<std::string> values;
  for (size_t k = 0; k < p.vals.size(); ++k) {
    std::string value = p.vals[k].expr ? detail::expr_code(*p.vals[k].expr, p)
                                       : load_expr(p.vals[k].access, timestamp_expr(p));
    if (p.vals[k].usecs && !p.vals[k].expr) value = fmt::format("({} / 1000)", value);
    values.push_back(std::move(value));
  }
  if (p.hot_slots > 0) out += detail::hot_hit(i, p, values);
  if (p.table_map == plan::TableMap::Log2Slots) {
    // Every slot exists: the lookup is a bounds check.
    out += fmt::format("  __u32 slot = (__u32)key->k0;\n  struct histd_val{} *v = bpf_map_lookup_elem(&{}, &slot);\n"
                       "  if (!v)\n    return;\n",
                       i, table_map_name(i));
  } else {
    // The initial value is only built on a miss: most events update an entry.
    out += fmt::format("  struct histd_val{} *v = bpf_map_lookup_elem(&{}, key);\n  if (!v) {{\n", i, table_map_name(i));
    out += fmt::format("    struct histd_val{} init;\n    __builtin_memset(&init, 0, sizeof(init));\n", i);
    if (p.saves_comm()) out += "    histd_comm(c, init.comm, sizeof(init.comm));\n";
    out += fmt::format("    v = histd_insert_entry(&{}, key, &init, st);\n    if (!v)\n      return;\n  }}\n",
                       table_map_name(i));
  }
  for (size_t k = 0; k < values.size(); ++k) {
    // A shared table's entry is updated by every CPU at once.
    if (p.per_cpu_table())
      out += fmt::format("  v->v[{}] += {};\n", k, values[k]);
    else
      out += fmt::format("  __sync_fetch_and_add(&v->v[{}], {});\n", k, values[k]);
  }
  out += "  st->hits++;\n";
  if (p.hot_slots > 0) out += detail::hot_claim(i, p);
  out += detail::emit_var_store_and_actions(i, in);
  out += "}\n\n";
}

void emit_control(Emitter& em, size_t i, const ControlInput& in) {
  const std::string filter = in.filter ? em.filter_expr(*in.filter, in.filter->root) : "";
  em.body += detail::emit_control(i, in, filter);
}

}  // namespace

std::string table_map_name(size_t trigger_index) { return fmt::format("tbl{}", trigger_index); }
std::string stats_map_name(size_t trigger_index) { return fmt::format("st{}", trigger_index); }
std::string hot_map_name(size_t trigger_index) { return fmt::format("hot{}", trigger_index); }

// Each trigger is its own BPF subprogram: frames are reused across calls,
// so several triggers' keys never add up against the 512-byte stack. A
// unit's only trigger is inlined instead: it has no sibling to share with.
std::string generate_event_unit(const std::vector<TriggerInput>& triggers, const std::vector<ControlInput>& enables,
                                const std::vector<InlinedEvent>& inlined, EventEntry entry, const RecordInput* record) {
  std::string out = std::string("/* Generated by histd. */\n") + kUnitPrelude;
  if (entry.chained) out += "#define HISTD_CHAINED 1\n";
  out += "#include \"chain.bpf.h\"\n\n";
  // Every trigger and enable of the unit, numbered: the event's own first.
  std::vector<const TriggerInput*> all;
  std::vector<const ControlInput*> all_controls;
  for (const TriggerInput& t : triggers) all.push_back(&t);
  for (const ControlInput& e : enables) all_controls.push_back(&e);
  for (const InlinedEvent& ie : inlined) {
    for (const TriggerInput& t : ie.triggers) all.push_back(&t);
    for (const ControlInput& e : ie.controls) all_controls.push_back(&e);
  }
  const bool nested = !inlined.empty();
  for (size_t i = 0; i < all.size(); ++i) emit_types(out, i, *all[i]->plan);
  for (size_t j = 0; j < inlined.size(); ++j)
    out += fmt::format(
        "static __always_inline void handle_s{}(void *ctx, const void *rec, const struct histd_common *c);\n", j);
  if (nested) out += "\n";
  Emitter em;
  const bool alone = all.size() == 1 && all_controls.empty();
  for (size_t i = 0; i < all.size(); ++i) emit_handler(em, i, *all[i], nested, alone);
  for (size_t i = 0; i < all_controls.size(); ++i) emit_control(em, i, *all_controls[i]);
  const plan::TypedFilter* eprobe_filter = entry.kind == EventEntry::Kind::Probe ? entry.probe.filter : nullptr;
  if (eprobe_filter)
    em.helpers += "static __always_inline int eprobe_filter(const void *rec, const struct histd_common *c) {\n"
                  "  (void)rec;\n  (void)c;\n  return " +
                  em.filter_expr(*eprobe_filter, eprobe_filter->root) + ";\n}\n\n";
  const bool stacks = record || std::any_of(all_controls.begin(), all_controls.end(), [](const ControlInput* c) {
                         return c->kind == parse::ControlTrigger::Kind::Stacktrace;
                       });
  if (stacks) out += detail::emit_stack_buffer();
  // Recorded eprobes on a synthetic event a trigger generates are built in a buffer of their own.
  const bool eprobes = std::any_of(all.begin(), all.end(), [](const TriggerInput* t) {
    return std::any_of(t->synths.begin(), t->synths.end(), [](const SynthTarget& s) { return !s.eprobes.empty(); });
  });
  if (eprobes) out += detail::emit_eprobe_buffer();
  out += em.helpers;
  out += em.body;
  if (record) out += detail::emit_record(*record);
  // The kernel keeps enable triggers at the head of an event's trigger list
  // and hist triggers at its tail: enables run first (it matters when one
  // targets its own event).
  auto calls = [](size_t first_enable, size_t enables_n, size_t first_trigger, size_t triggers_n) {
    std::string o;
    for (size_t k = 0; k < enables_n; ++k) o += fmt::format("  control_{}(ctx, rec, c);\n", first_enable + k);
    for (size_t k = 0; k < triggers_n; ++k) o += fmt::format("  trigger_{}(ctx, rec, c);\n", first_trigger + k);
    return o + "  (void)ctx;\n  (void)rec;\n  (void)c;\n}\n\n";
  };
  size_t first_trigger = triggers.size(), first_enable = enables.size();
  for (size_t j = 0; j < inlined.size(); ++j) {
    out += fmt::format(
        "static __always_inline void handle_s{}(void *ctx, const void *rec, const struct histd_common *c) {{\n", j);
    out += calls(first_enable, inlined[j].controls.size(), first_trigger, inlined[j].triggers.size());
    first_trigger += inlined[j].triggers.size();
    first_enable += inlined[j].controls.size();
  }
  out += "static __always_inline void handle(void *ctx, const void *rec, const struct histd_common *c) {\n";
  // The record is traced before the triggers run, as tracefs writes an
  // event to its buffer before the triggers that see it fire.
  if (record) out += "  record_event(ctx, rec, c);\n";
  out += calls(0, enables.size(), 0, triggers.size());
  // A traced record, a stack and a snapshot notice carry their task and time.
  const bool notices = stacks || std::any_of(all_controls.begin(), all_controls.end(), [](const ControlInput* c) {
                         return c->kind == parse::ControlTrigger::Kind::Snapshot;
                       });
  bool needs_ts = notices;
  for (const TriggerInput& t : triggers)
    needs_ts = needs_ts || (t.plan->uses_timestamp() && t.plan->clock_source == plan::HistPlan::Clock::Mono);
  const int ts = needs_ts ? 1 : 0;
  // Decided from the plans, never by searching the code just generated.
  bool reads_pid = notices;
  for (const TriggerInput* t : all) reads_pid = reads_pid || detail::reads_common_pid(*t->plan);
  for (const ControlInput* e : all_controls) reads_pid = reads_pid || (e->filter && detail::reads_common_pid(*e->filter));
  reads_pid = reads_pid || (eprobe_filter && detail::reads_common_pid(*eprobe_filter));
  const int pid = reads_pid ? 1 : 0;
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
  }
  if (entry.test_entry) out += fmt::format("HISTD_TEST_ENTRY(handle, {})\n", ts);
  return out;
}

}  // namespace histd::codegen
