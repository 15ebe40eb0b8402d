// SPDX-License-Identifier: GPL-2.0-only
// Filters as C (the Emitter's part of codegen): comparisons with the
// numbers read from histd_k[], string predicates as helper functions.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/emit.h"

namespace histd::codegen::detail {

using plan::FieldAccess;
using plan::Source;

namespace {

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
    any += lo == hi ? fmt::format("{} == 0x{:02x}", ch, lo)
                    : fmt::format("({} >= 0x{:02x} && {} <= 0x{:02x})", ch, lo, ch, hi);
  }
  if (any.empty()) any = "0";
  return atom.negated ? fmt::format("!({})", any) : fmt::format("({})", any);
}

// All atoms of a segment at `base` (an expression) + their position.
std::string segment_expr(const std::vector<plan::GlobAtom>& seg, const std::string& base, bool masked) {
  std::string e;
  for (size_t m = 0; m < seg.size(); ++m) {
    if (!e.empty()) e += " && ";
    const std::string index =
        masked ? fmt::format("(({} + {}u) & (HISTD_STR_MAX * 2 - 1))", base, m) : fmt::format("{}", m);
    e += atom_expr(seg[m], index);
  }
  return e.empty() ? "1" : e;
}

}  // namespace

std::string Emitter::number(uint64_t value) {
  constants.push_back(value);
  return fmt::format("histd_k[{}]", constants.size() - 1);
}

// The operands of a run of `kind` terms, left to right, joined by `op`
// (both operators are associative, and C evaluates the flat chain in the
// same order as the nested one).
void Emitter::chain(const plan::TypedFilter& f, int index, plan::FilterTerm::Kind kind, const char* op,
                    std::string& out) {
  const plan::FilterTerm& t = f.terms.at(static_cast<size_t>(index));
  if (t.kind != kind) {
    if (!out.empty()) out += op;
    out += filter_expr(f, index);
    return;
  }
  chain(f, t.lhs, kind, op, out);
  chain(f, t.rhs, kind, op, out);
}

std::string Emitter::filter_expr(const plan::TypedFilter& f, int index) {
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
  const std::string constant = number(t.constant);
  if (t.op == parse::CompareOp::BitAnd) return fmt::format("(({} & {}) != 0)", value, constant);
  if (t.field.is_signed) return fmt::format("((__s64){} {} (__s64){})", value, compare_op(t.op), constant);
  return fmt::format("({} {} {})", value, compare_op(t.op), constant);
}

// Emits strpred_<n>(): copies the string to the per-CPU buffer and matches it.
size_t Emitter::string_predicate(const plan::FilterTerm& t) {
  const size_t n = next_predicate_++;
  const bool negate = t.op == parse::CompareOp::Ne;
  const std::string no = negate ? "1" : "0";
  const std::string yes = negate ? "0" : "1";
  std::string& o = helpers;
  o += fmt::format(
      "static __attribute__((noinline)) int strpred_{}(const void *rec, const struct histd_common *c) {{\n", n);
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
    if (!m.segments.empty())
      o += fmt::format("  if (!({}))\n    return {};\n", segment_expr(m.segments[0], "0", false), no);
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
    o += fmt::format("  end = len - {}u;\n  if (!({}))\n    return {};\n", seg.size(), segment_expr(seg, "end", true),
                     no);
    --last;
  }
  for (size_t k = first; k < last; ++k) {
    const auto& seg = m.segments[k];
    o += fmt::format(
        "  {{\n    int found = 0;\n    __u32 p;\n    for (p = pos; p < HISTD_STR_MAX; p++) {{\n"
        "      if (p + {}u > end)\n        break;\n      if ({}) {{\n        found = 1;\n        break;\n      }}\n    "
        "}}\n"
        "    if (!found)\n      return {};\n    pos = histd_forget(&b->pos, p + {}u);\n  }}\n",
        seg.size(), segment_expr(seg, "p", true), no, seg.size());
  }
  o += fmt::format("  return {};\n}}\n\n", yes);
  return n;
}

std::string Emitter::load_string(const FieldAccess& a) {
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

}  // namespace histd::codegen::detail

namespace histd::codegen {

std::string constants_comment(const std::vector<uint64_t>& constants) {
  if (constants.empty()) return {};
  std::string out = "/* histd: histd_k[] =";
  for (uint64_t k : constants) out += fmt::format(" 0x{:x}", k);
  return out + " */\n";
}

}  // namespace histd::codegen
