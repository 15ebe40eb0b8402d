#include "histd/codegen.h"

#include <fmt/format.h>

namespace histd::codegen {

namespace {

using plan::FieldAccess;
using plan::Source;

std::string load_expr(const FieldAccess& a) {
  switch (a.source) {
    case Source::CommonPid:
      return "c->pid";
    case Source::CommonCpu:
      return "((__u64)bpf_get_smp_processor_id())";
    case Source::Timestamp:
      return "bpf_ktime_get_ns()";
    case Source::Hitcount:
      return "1";
    case Source::Record:
      break;
  }
  const char* sign = a.is_signed ? "S" : "U";
  return fmt::format("HISTD_LOAD_{}{}(rec, {}u)", sign, a.size * 8, a.offset);
}

const char* compare_op(spec::CompareOp op) {
  switch (op) {
    case spec::CompareOp::Eq:
      return "==";
    case spec::CompareOp::Ne:
      return "!=";
    case spec::CompareOp::Lt:
      return "<";
    case spec::CompareOp::Le:
      return "<=";
    case spec::CompareOp::Gt:
      return ">";
    case spec::CompareOp::Ge:
      return ">=";
    case spec::CompareOp::BitAnd:
    case spec::CompareOp::Glob:
      break;
  }
  return nullptr;
}

std::string filter_expr(const plan::TypedFilter& f, int index) {
  const plan::FilterTerm& t = f.terms.at(static_cast<size_t>(index));
  switch (t.kind) {
    case plan::FilterTerm::Kind::And:
      return fmt::format("({} && {})", filter_expr(f, t.lhs), filter_expr(f, t.rhs));
    case plan::FilterTerm::Kind::Or:
      return fmt::format("({} || {})", filter_expr(f, t.lhs), filter_expr(f, t.rhs));
    case plan::FilterTerm::Kind::Not:
      return fmt::format("(!{})", filter_expr(f, t.lhs));
    case plan::FilterTerm::Kind::Compare:
      break;
  }
  const std::string value = load_expr(t.field);
  const std::string constant = fmt::format("0x{:x}ULL", t.constant);
  if (t.op == spec::CompareOp::BitAnd) return fmt::format("(({} & {}) != 0)", value, constant);
  if (t.field.is_signed)
    return fmt::format("((__s64){} {} (__s64){})", value, compare_op(t.op), constant);
  return fmt::format("({} {} {})", value, compare_op(t.op), constant);
}

// Copies a string field into key member k<k>, always leaving it terminated.
std::string string_key(size_t k, const plan::KeyField& key) {
  using catalog::FieldKind;
  if (key.access.kind == FieldKind::CharArray) {
    const uint32_t n = std::min(key.access.size, key.size - 1);
    return fmt::format("  __builtin_memcpy(key.k{}, (const char *)rec + {}u, {}u);\n", k, key.access.offset, n);
  }
  // __data_loc: a u32 (len << 16 | offset) locating the string in the
  // record; __rel_loc counts the offset from the end of the field.
  const uint32_t base = key.access.kind == FieldKind::RelString ? key.access.offset + key.access.size : 0;
  return fmt::format(
      "  {{\n    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {}u);\n"
      "    bpf_probe_read_kernel_str(key.k{}, {}u, (const char *)rec + {}u + (loc & 0xffff));\n  }}\n",
      key.access.offset, k, key.size, base);
}

void emit_types(std::string& out, size_t i, const plan::HistPlan& p) {
  out += fmt::format("struct histd_key{} {{\n", i);
  for (size_t k = 0; k < p.keys.size(); ++k) {
    const plan::KeyField& key = p.keys[k];
    if (key.display == table::KeyDisplay::String)
      out += fmt::format("  char k{}[{}];\n", k, key.size);
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
  out += "};\n";
  out += fmt::format("_Static_assert(sizeof(struct histd_val{}) == {}, \"value size\");\n", i, p.value_size());
  out += fmt::format(
      "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);\n  __uint(max_entries, {});\n"
      "  __type(key, struct histd_key{});\n  __type(value, struct histd_val{});\n}} {} SEC(\".maps\");\n",
      p.max_entries, i, i, table_map_name(i));
  out += fmt::format(
      "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, 1);\n"
      "  __type(key, __u32);\n  __type(value, struct histd_table_stats);\n}} {} SEC(\".maps\");\n\n",
      stats_map_name(i));
}

void emit_handler(std::string& out, size_t i, const TriggerInput& in) {
  const plan::HistPlan& p = *in.plan;
  out += fmt::format(
      "static __attribute__((noinline)) void trigger_{}(const void *rec, const struct histd_common *c) {{\n",
      i);
  out += "  (void)rec;\n  (void)c;\n";
  out += fmt::format("  if (histd_paused({}u))\n    return;\n", in.control_slot);
  if (p.filter) out += fmt::format("  if (!{})\n    return;\n", filter_expr(*p.filter, p.filter->root));
  out += fmt::format("  struct histd_table_stats *st = histd_stats(&{});\n  if (!st)\n    return;\n",
                     stats_map_name(i));
  out += fmt::format("  struct histd_key{} key;\n  __builtin_memset(&key, 0, sizeof(key));\n", i);
  for (size_t k = 0; k < p.keys.size(); ++k) {
    const plan::KeyField& key = p.keys[k];
    if (key.display == table::KeyDisplay::String) {
      out += string_key(k, key);
      continue;
    }
    std::string value = load_expr(key.access);
    switch (key.transform) {
      case plan::KeyTransform::None:
        break;
      case plan::KeyTransform::Log2:
        value = fmt::format("histd_log2({})", value);
        break;
      case plan::KeyTransform::Buckets:
        value = fmt::format("(({} / {}ULL) * {}ULL)", value, key.buckets, key.buckets);
        break;
    }
    out += fmt::format("  key.k{} = {};\n", k, value);
  }
  // The initial value is only built on a miss: most events update an entry.
  out += fmt::format("  struct histd_val{} *v = bpf_map_lookup_elem(&{}, &key);\n  if (!v) {{\n", i, table_map_name(i));
  out += fmt::format("    struct histd_val{} init;\n    __builtin_memset(&init, 0, sizeof(init));\n", i);
  if (p.saves_comm()) out += "    bpf_get_current_comm(init.comm, sizeof(init.comm));\n";
  out += fmt::format("    v = histd_insert(&{}, &key, &init, st);\n    if (!v)\n      return;\n  }}\n",
                     table_map_name(i));
  for (size_t k = 0; k < p.vals.size(); ++k) out += fmt::format("  v->v[{}] += {};\n", k, load_expr(p.vals[k].access));
  out += "  st->hits++;\n}\n\n";
}

}  // namespace

std::string table_map_name(size_t trigger_index) { return fmt::format("tbl{}", trigger_index); }
std::string stats_map_name(size_t trigger_index) { return fmt::format("st{}", trigger_index); }

// Each trigger is its own BPF subprogram: frames are reused across calls,
// so several triggers' keys never add up against the 512-byte stack.
std::string generate_event_unit(const std::vector<TriggerInput>& triggers) {
  std::string out =
      "/* Generated by histd. */\n"
      "#include <linux/bpf.h>\n"
      "#include \"hist_helpers.bpf.h\"\n\n";
  for (size_t i = 0; i < triggers.size(); ++i) emit_types(out, i, *triggers[i].plan);
  for (size_t i = 0; i < triggers.size(); ++i) emit_handler(out, i, triggers[i]);
  out += "static __always_inline void handle(const void *rec, const struct histd_common *c) {\n";
  for (size_t i = 0; i < triggers.size(); ++i) out += fmt::format("  trigger_{}(rec, c);\n", i);
  out += "  (void)rec;\n  (void)c;\n}\n\nHISTD_EVENT_ENTRY(handle)\nHISTD_TEST_ENTRY(handle)\n";
  return out;
}

}  // namespace histd::codegen
