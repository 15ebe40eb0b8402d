// SPDX-License-Identifier: GPL-2.0-only
// Codegen of variables, references and actions. Every name is synthesized
// (vv<slot>, r<k>, var<i>, xv<i>_<k>) and every number re-printed: no text
// of the user's command reaches the generated C.
#include <fmt/format.h>

#include "codegen/emit.h"

namespace histd::codegen {

std::string var_map_name(size_t trigger_index) { return fmt::format("var{}", trigger_index); }
std::string ref_map_name(size_t trigger_index, size_t ref_index) {
  return fmt::format("xv{}_{}", trigger_index, ref_index);
}

namespace detail {

namespace {

using plan::ExprOp;

std::string op_code(const plan::TypedExpr& e, int index, const plan::HistPlan& p) {
  const ExprOp& op = e.ops.at(static_cast<size_t>(index));
  switch (op.kind) {
    case ExprOp::Kind::Field: {
      const std::string v = load_expr(op.access, timestamp_expr(p));
      return op.usecs ? fmt::format("({} / 1000)", v) : v;
    }
    case ExprOp::Kind::Constant:
      return fmt::format("0x{:x}ULL", op.constant);
    case ExprOp::Kind::Ref: {
      const plan::VarRef& r = p.refs.at(static_cast<size_t>(op.ref));
      return r.self ? fmt::format("vv{}", r.slot) : fmt::format("r{}", op.ref);
    }
    case ExprOp::Kind::Add:
      return fmt::format("({} + {})", op_code(e, op.lhs, p), op_code(e, op.rhs, p));
    case ExprOp::Kind::Sub:
      return fmt::format("({} - {})", op_code(e, op.lhs, p), op_code(e, op.rhs, p));
    case ExprOp::Kind::Mul:
      return fmt::format("({} * {})", op_code(e, op.lhs, p), op_code(e, op.rhs, p));
    case ExprOp::Kind::Negate:
      return fmt::format("(0ULL - {})", op_code(e, op.lhs, p));
    case ExprOp::Kind::Div:
      break;
  }
  const std::string a = op_code(e, op.lhs, p);
  switch (op.div) {
    case plan::DivStrategy::Runtime:
      return fmt::format("histd_div({}, {})", a, op_code(e, op.rhs, p));
    case plan::DivStrategy::Shift: {
      unsigned shift = 0;
      while ((uint64_t{1} << shift) < op.divisor) ++shift;
      return fmt::format("({} >> {})", a, shift);
    }
    case plan::DivStrategy::MultShift:
      return fmt::format("histd_div_mult({}, {}ULL, {}ULL)", a, op.divisor, (uint64_t{1} << 20) / op.divisor);
    case plan::DivStrategy::Plain:
      return fmt::format("({} / {}ULL)", a, op.divisor);
  }
  return "0";
}

uint32_t words(uint32_t bytes) { return (bytes + 7) / 8; }

// Copies a string field to `dst` (a char pointer expression), at most `cap`
// bytes with the NUL; evaluates to the bytes copied, NUL included.
std::string copy_string(const plan::FieldAccess& a, const std::string& dst, uint32_t cap) {
  using catalog::FieldKind;
  if (a.source == plan::Source::CurrentComm)
    return fmt::format("  histd_comm(c, {}, {}u);\n  n = 16;\n", dst, std::min<uint32_t>(cap, 16));
  if (a.kind == FieldKind::CharArray) {
    const uint32_t n = std::min(a.size, cap - 1);
    return fmt::format("  n = bpf_probe_read_kernel_str({}, {}u, (const char *)rec + {}u);\n", dst, n + 1, a.offset);
  }
  const uint32_t base = a.kind == FieldKind::RelString ? a.offset + a.size : 0;
  return fmt::format(
      "  {{\n    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {}u);\n"
      "    n = bpf_probe_read_kernel_str({}, {}u, (const char *)rec + {}u + (loc & 0xffff));\n  }}\n",
      a.offset, dst, cap, base);
}

// The whole 8-byte slot is written: the buffer is reused, and readers of the
// record (string keys, the trace line) must never see an older event's bytes.
std::string store_int(const std::string& base, uint32_t offset, uint32_t size, const std::string& value) {
  const char* type = size == 1 ? "__u8" : size == 2 ? "__u16" : size == 4 ? "__u32" : "__u64";
  return fmt::format("  *(__u64 *)({} + {}u) = (__u64)({}){};\n", base, offset, type, value);
}

// Where a string or stack variable's value is: its reference's bytes.
std::string blob_source(const plan::TypedExpr& e, const plan::HistPlan& p) {
  const plan::VarRef& r = p.refs.at(static_cast<size_t>(e.blob_ref));
  // Its own variable: in its record, stored before the actions run.
  if (r.self) return fmt::format("((const __u8 *)vr + {}u)", r.blob_offset);
  return fmt::format("rb{}", e.blob_ref);
}

std::string emit_blob_store(const plan::Variable& v, const plan::HistPlan& p) {
  const std::string dst = fmt::format("((char *)vr + {}u)", v.blob_offset);
  std::string o = "  {\n    long n = 0;\n    (void)n;\n";
  if (v.expr.blob_ref >= 0) {
    // Another variable's value, copied whole.
    o += fmt::format("    __builtin_memcpy({}, {}, {}u);\n", dst, blob_source(v.expr, p), v.blob_size);
    if (v.expr.is_string) o += fmt::format("    vr->w[{}] = r{};\n", 1 + v.slot, v.expr.blob_ref);
  } else if (v.expr.is_stack) {
    // The stack at the event, as a synthetic long[] field keeps it: the
    // frame count, then the frames.
    o += fmt::format(
        "    __builtin_memset({0}, 0, {1}u);\n"
        "    n = bpf_get_stack(ctx, {0} + 8, {2}u, 0);\n    if (n < 0)\n      n = 0;\n"
        "    *(__u64 *){0} = (__u64)n / 8;\n",
        dst, v.blob_size, v.blob_size - 8);
  } else {
    o += fmt::format("    __builtin_memset({}, 0, {}u);\n", dst, v.blob_size);
    o += copy_string(v.expr.string_field, dst, v.blob_size);
    o += fmt::format("    if (n < 0)\n      n = 0;\n    vr->w[{}] = (__u64)n;\n", 1 + v.slot);
  }
  return o + "  }\n";
}

// A string or stack variable as a synthetic event's field: its bytes
// copied into the record (a static string's room, or the next 256-byte
// dynamic area at `dyn` with the field's location word).
std::string generate_blob_param(const plan::ActionParam& prm, const plan::HistPlan& p, uint32_t dyn) {
  using Kind = synth::SynthField::Kind;
  const synth::SynthField& f = prm.target;
  const std::string src = blob_source(prm.value, p);
  const plan::VarRef& r = p.refs.at(static_cast<size_t>(prm.value.blob_ref));
  const std::string len =
      r.self ? fmt::format("((const __u64 *)vr)[{}]", 1 + r.slot) : fmt::format("r{}", prm.value.blob_ref);
  if (f.kind == Kind::StaticString) {
    const uint32_t room = std::min<uint32_t>(f.size, 256);
    return fmt::format("  __builtin_memcpy(sb->rec + {}u, {}, {}u);\n  sb->rec[{}u] = 0;\n", f.offset, src, room,
                       f.offset + room - 1);
  }
  std::string o = fmt::format("  __builtin_memcpy(sb->rec + {}u, {}, 256u);\n", dyn, src);
  if (f.kind == Kind::Stack)  // the frame count, then the frames: (count + 1) words
    o += fmt::format("  n = (long)((*(const __u64 *)(sb->rec + {0}u) & 31) + 1) * 8;\n", dyn);
  else
    o += fmt::format("  n = (long)({} & 0x1ff);\n  if (n > 256)\n    n = 256;\n", len);
  o += fmt::format("  *(__u32 *)(sb->rec + {}u) = ((__u32)(n & 0xffff) << 16) | {}u;\n", f.offset, dyn);
  return o;
}

// A recorded eprobe on the synthetic event just built (sb): its record,
// computed from the synthetic record as from an attached event's, goes to
// the ring as a traced record.
std::string emit_eprobe_output(const EprobeOutput& e) {
  std::string o = fmt::format("        if (!histd_paused({}u) && histd_tracing_on()) {{\n", e.slot);
  o += fmt::format("          struct histd_recbuf *eb = histd_eprobe_begin(&{});\n", kEprobeBufferMap);
  o += "          if (eb) {\n";
  o += "            struct histd_common ec = histd_common_at(c, sb->n.ts);\n";
  // The argument code reads `ctx` (the attached record) into `rec`.
  o += "            void *ctx = sb->rec;\n            __u8 *rec = eb->rec;\n";
  o += fmt::format("            __u32 data = {}u;\n", e.entry.fixed_size);
  o += probe_values(e.entry);
  o += fmt::format("            histd_eprobe_send(eb, data, {}u, &ec);\n          }}\n        }}\n", e.id);
  return o;
}

// Builds the synthetic event of a Trace action, runs it through the
// synthetic event's triggers inlined in this unit, and sends it to the ring
// when the event is traced.
std::string emit_generate(const plan::ActionPlan& a, const SynthTarget& t, const TriggerInput& in) {
  const plan::HistPlan& p = *in.plan;
  std::string o = "  {\n";
  o += fmt::format("    if (!histd_paused({}u)) {{\n", t.control_slot);
  o += fmt::format("      struct histd_synbuf *sb = histd_synth_begin(c, {}u, {}u, {}, {}u);\n", t.id, t.record_size,
                   p.clock_source == plan::HistPlan::Clock::Mono && p.uses_timestamp() ? "c->ts" : "bpf_ktime_get_ns()",
                   in.depth);
  o += "      if (sb) {\n        long n = 0;\n        (void)n;\n";
  // Dynamic strings go after the fixed part, 256 bytes each.
  uint32_t dyn = t.fixed_size;
  std::string body;
  for (const plan::ActionParam& prm : a.params) {
    const synth::SynthField& f = prm.target;
    using Kind = synth::SynthField::Kind;
    if (prm.value.blob_ref >= 0) {
      body += generate_blob_param(prm, p, dyn);
      if (f.kind != Kind::StaticString) dyn += 256;
    } else if (f.kind == Kind::StaticString && prm.value.is_string) {
      const uint32_t room = std::min<uint32_t>(f.size, 256);
      body += fmt::format("  __builtin_memset(sb->rec + {}u, 0, {}u);\n", f.offset, (room + 7) & ~7u);
      body += copy_string(prm.value.string_field, fmt::format("(char *)sb->rec + {}u", f.offset), room);
    } else if (f.kind == Kind::DynamicString && prm.value.is_string) {
      body += fmt::format("  __builtin_memset(sb->rec + {}u, 0, 256u);\n", dyn);
      body += copy_string(prm.value.string_field, fmt::format("(char *)sb->rec + {}u", dyn), 256);
      body +=
          fmt::format("  if (n < 0)\n    n = 0;\n  *(__u32 *)(sb->rec + {}u) = ((__u32)(n & 0xffff) << 16) | {}u;\n",
                      f.offset, dyn);
      dyn += 256;
    } else if (f.kind == Kind::Stack && prm.value.is_stack) {
      // The kernel's layout: a u64 frame count, then the frames.
      body += fmt::format(
          "  __builtin_memset(sb->rec + {0}u, 0, 256u);\n"
          "  n = bpf_get_stack(ctx, sb->rec + {0}u + 8u, 248u, 0);\n  if (n < 0)\n    n = 0;\n"
          "  *(__u64 *)(sb->rec + {0}u) = (__u64)n / 8;\n"
          "  *(__u32 *)(sb->rec + {1}u) = ((__u32)((n + 8) & 0xffff) << 16) | {0}u;\n",
          dyn, f.offset);
      dyn += 256;
    } else if (f.kind == Kind::Integer) {
      body += store_int("sb->rec", f.offset, f.size, expr_code(prm.value, p));
    }
  }
  o += body;
  o += fmt::format("        if (!histd_paused({}u))\n", t.trace_slot);
  o += fmt::format("          histd_synth_trace(c, sb, {}u);\n", t.record_size);
  if (t.inlined >= 0)
    o += fmt::format(
        "        struct histd_common sc = histd_common_at(c, sb->n.ts);\n"
        "        handle_s{}(ctx, sb->rec, &sc);\n",
        t.inlined);
  for (const EprobeOutput& e : t.eprobes) o += emit_eprobe_output(e);
  o += "      }\n    }\n  }\n";
  return o;
}

}  // namespace

std::string expr_code(const plan::TypedExpr& e, const plan::HistPlan& p) {
  if (e.root < 0) return "0";
  return op_code(e, e.root, p);
}

void emit_inter_event_types(std::string& unit, size_t i, const plan::HistPlan& p) {
  std::string out;
  if (p.has_var_map()) out += fmt::format("struct histd_vrec{} {{\n  __u64 w[{}];\n}};\n", i, words(p.var_record_size));
  if (p.separate_var_map()) {
    out += fmt::format(
        "struct {{\n  __uint(type, BPF_MAP_TYPE_HASH);\n  __uint(max_entries, 1);\n"
        "  __type(key, struct histd_key{});\n  __type(value, struct histd_vrec{});\n}} {} SEC(\".maps\");\n",
        i, i, var_map_name(i));
  }
  for (size_t k = 0; k < p.refs.size(); ++k) {
    const plan::VarRef& r = p.refs[k];
    if (r.self) continue;
    out += fmt::format("struct histd_xk{}_{} {{\n  __u8 b[{}];\n}};\n", i, k, r.owner_key_size);
    // The owner's map value: the record, after the owner's values when its
    // table holds it.
    out += fmt::format("struct histd_xr{}_{} {{\n", i, k);
    if (r.owner_record_offset) out += fmt::format("  __u64 values[{}];\n", r.owner_record_offset / 8);
    out += fmt::format("  __u64 w[{}];\n}};\n", words(r.owner_record_size));
    out += fmt::format(
        "struct {{\n  __uint(type, BPF_MAP_TYPE_HASH);\n  __uint(max_entries, 1);\n"
        "  __type(key, struct histd_xk{0}_{1});\n  __type(value, struct histd_xr{0}_{1});\n}} {2} SEC(\".maps\");\n",
        i, k, ref_map_name(i, k));
  }
  for (const plan::ActionPlan& a : p.actions)
    if (a.kind == parse::Action::Kind::Snapshot) {
      out += fmt::format(
          "struct histd_snap{0} {{\n  struct histd_notice n;\n  __u64 v;\n  struct histd_key{0} k;\n}};\n", i);
      break;
    }
  if (!out.empty()) unit += out + "\n";
}

std::string emit_ref_reads(size_t i, const plan::HistPlan& p) {
  std::string o;
  for (size_t k = 0; k < p.refs.size(); ++k) {
    const plan::VarRef& r = p.refs[k];
    if (r.self) continue;
    // The owner's table is looked up with this event's key, as the kernel
    // does: the key bytes, cut or zero-padded to the owner's key size.
    // A string or stack variable's value is its bytes in the owner's record
    // (rb<k>), its slot the string's length.
    if (r.blob_size) o += fmt::format("  const __u8 *rb{0} = 0;\n  (void)rb{0};\n", k);
    o += fmt::format("  __u64 r{} = 0;\n", k);
    if (r.blob_size) o += fmt::format("  (void)r{};\n", k);
    o += "  {\n";
    if (r.owner_key_size == p.key_size) {
      o += fmt::format("    struct histd_xr{}_{} *x = bpf_map_lookup_elem(&{}, key);\n", i, k, ref_map_name(i, k));
    } else {
      o += fmt::format(
          "    struct histd_xk{0}_{1} xk;\n    __builtin_memset(&xk, 0, sizeof(xk));\n"
          "    __builtin_memcpy(&xk, key, {2}u);\n",
          i, k, std::min(r.owner_key_size, p.key_size));
      o += fmt::format("    struct histd_xr{}_{} *x = bpf_map_lookup_elem(&{}, &xk);\n", i, k, ref_map_name(i, k));
    }
    const uint64_t bit = uint64_t{1} << r.slot;
    o += fmt::format("    if (!x || !(x->w[0] & 0x{:x}ULL))\n      return;\n", bit);
    o += fmt::format("    r{} = x->w[{}];\n", k, 1 + r.slot);
    if (r.blob_size) o += fmt::format("    rb{} = (const __u8 *)x->w + {}u;\n", k, r.blob_offset);
    // Read once: the set bit cleared, plainly where it is the record's
    // only one (HistPlan::sole_variable); beside other variables' bits
    // atomically, so that another CPU's set of one of those is not lost.
    if (r.read_once && r.owner_sole_var)
      o += "    x->w[0] = 0;\n";
    else if (r.read_once)
      o += fmt::format("    __sync_fetch_and_and(&x->w[0], ~0x{:x}ULL);\n", bit);
    o += "  }\n";
  }
  return o;
}

std::string emit_var_values(const plan::HistPlan& p) {
  std::string o;
  // A string or stack variable's bytes are copied into the record when it
  // is stored (emit_blob_store); its slot holds a string's length.
  for (const plan::Variable& v : p.vars)
    if (!v.blob_size) o += fmt::format("  __u64 vv{} = {};\n", v.slot, expr_code(v.expr, p));
  return o;
}

namespace {

// `vr`: the variable record of the key's entry.
std::string var_record(size_t i, const plan::HistPlan& p) {
  if (p.records_in_table()) {
    // The record is in the entry the table update just found (`v`).
    return fmt::format("  struct histd_vrec{0} *vr = (struct histd_vrec{0} *)v->rec;\n", i);
  }
  if (!p.has_var_map()) return "";
  std::string o =
      fmt::format("  struct histd_vrec{} *vr = bpf_map_lookup_elem(&{}, key);\n  if (!vr) {{\n", i, var_map_name(i));
  o += fmt::format("    struct histd_vrec{} vinit;\n    __builtin_memset(&vinit, 0, sizeof(vinit));\n", i);
  o += fmt::format("    vr = histd_insert(&{}, key, &vinit, st, 0);\n    if (!vr)\n      return;\n  }}\n",
                   var_map_name(i));
  return o;
}

// Every variable into its slot of the record, then their set bits.
std::string var_stores(const plan::HistPlan& p) {
  std::string o;
  uint64_t mask = 0;
  for (const plan::Variable& v : p.vars) {
    if (v.blob_size)
      o += emit_blob_store(v, p);
    else
      o += fmt::format("  vr->w[{}] = vv{};\n", 1 + v.slot, v.slot);
    mask |= uint64_t{1} << v.slot;
  }
  // As the read above: a lone variable's bit is stored, others' ORed in.
  if (mask && p.sole_variable())
    o += fmt::format("  vr->w[0] = 0x{:x}ULL;\n", mask);
  else if (mask)
    o += fmt::format("  __sync_fetch_and_or(&vr->w[0], 0x{:x}ULL);\n", mask);
  return o;
}

// User space keeps the global maximum and copies the trace buffer.
std::string snapshot_notice(size_t i, const TriggerInput& in, const std::string& cur) {
  return fmt::format(
      "    struct histd_snap{0} *sn = bpf_ringbuf_reserve(&histd_ring, sizeof(*sn), 0);\n"
      "    if (sn) {{\n      __builtin_memset(&sn->n, 0, sizeof(sn->n));\n"
      "      sn->n.id = {1}u;\n      sn->n.kind = HISTD_NOTICE_SNAPSHOT;\n"
      "      sn->n.size = sizeof(*sn) - sizeof(sn->n);\n      sn->n.ts = bpf_ktime_get_ns();\n"
      "      sn->v = {2};\n      __builtin_memcpy(&sn->k, key, sizeof(sn->k));\n"
      "      bpf_ringbuf_submit(sn, 0);\n    }} else {{\n      histd_count_lost(HISTD_LOST_SNAPSHOT);\n    }}\n",
      i, in.control_slot, cur);
}

// onmax($var) or onchange($var): when the variable passes its tracked
// value, the saves, the generated event or the snapshot notice.
std::string tracking_action(size_t i, const plan::ActionPlan& act, const SynthTarget& target, const TriggerInput& in) {
  const plan::HistPlan& p = *in.plan;
  const plan::Variable& tracked = p.vars.at(static_cast<size_t>(act.track_var));
  const std::string cur = fmt::format("vv{}", tracked.slot);
  const std::string old = fmt::format("vr->w[{}]", act.track_offset / 8);
  const char* cond = act.handler == parse::Action::Handler::OnMax ? ">" : "!=";
  std::string o = fmt::format("  if ({} {} {}) {{\n    {} = {};\n", cur, cond, old, old, cur);
  if (!act.saves.empty()) o += "    long n = 0;\n    (void)n;\n";
  for (const plan::SavedField& f : act.saves) {
    if (f.is_string)
      o += copy_string(f.access, fmt::format("(char *)vr + {}u", f.offset), f.size);
    else
      o += fmt::format("    vr->w[{}] = {};\n", f.offset / 8, load_expr(f.access, timestamp_expr(p)));
  }
  if (act.kind == parse::Action::Kind::Trace) o += emit_generate(act, target, in);
  if (act.kind == parse::Action::Kind::Snapshot) o += snapshot_notice(i, in, cur);
  o += "  }\n";
  return o;
}

}  // namespace

std::string emit_var_store_and_actions(size_t i, const TriggerInput& in) {
  const plan::HistPlan& p = *in.plan;
  std::string o = var_record(i, p);
  if (p.has_var_map()) o += var_stores(p);
  for (size_t a = 0; a < p.actions.size(); ++a) {
    const plan::ActionPlan& act = p.actions[a];
    const SynthTarget target = a < in.synths.size() ? in.synths[a] : SynthTarget{};
    if (act.handler == parse::Action::Handler::OnMatch)
      o += emit_generate(act, target, in);
    else
      o += tracking_action(i, act, target, in);
  }
  return o;
}

}  // namespace detail
}  // namespace histd::codegen
