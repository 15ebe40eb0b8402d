// SPDX-License-Identifier: GPL-2.0-only
// Filters as C (the Emitter's part of codegen): comparisons with the
// numbers read from histd_k[], string predicates as helper functions.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

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

// A segment of literal bytes only, matched at the start or at the end (an
// exact comparison's, a prefix's, a suffix's), is matched eight bytes at a
// time against words of histd_k[]: its bytes (in the host's order, as the
// program loads them) and a mask of the bytes a word holds, with its length
// a number too. The text then spells only how many words it has, so
// triggers that differ only in such strings (`comm == "bash"`, then "zsh")
// are one text. A segment with `?` or a class, and every segment of a glob
// that searches for one between stars, is matched a byte at a time, its
// bytes and length in the text.
bool all_literal(const std::vector<plan::GlobAtom>& seg) {
  return std::all_of(seg.begin(), seg.end(),
                     [](const plan::GlobAtom& a) { return a.kind == plan::GlobAtom::Kind::Literal; });
}

// Segment `seg` at index expression `base` ("" for 0) of b->s. A base is
// the string's length less the segment's, so each word's index stays under
// HISTD_STR_MAX: the mask only shows the verifier so.
std::string Emitter::segment_match(const std::vector<plan::GlobAtom>& seg, const std::string& base, bool words) {
  if (!words || !all_literal(seg)) return segment_expr(seg, base.empty() ? "0" : base, !base.empty());
  std::string e;
  for (size_t w = 0; w * 8 < seg.size(); ++w) {
    uint8_t bytes[8] = {}, mask[8] = {};
    for (size_t k = 0; k < 8 && w * 8 + k < seg.size(); ++k) {
      bytes[k] = seg[w * 8 + k].byte;
      mask[k] = 0xff;
    }
    uint64_t word = 0, word_mask = 0;
    std::memcpy(&word, bytes, 8);
    std::memcpy(&word_mask, mask, 8);
    const std::string at =
        base.empty() ? fmt::format("{}u", w * 8) : fmt::format("(({} + {}u) & (HISTD_STR_MAX - 1))", base, w * 8);
    const std::string k = number(word);
    const std::string mask_k = number(word_mask);
    if (!e.empty()) e += " && ";
    e += fmt::format("(((*(const __u64 *)(b->s + {}) ^ {}) & {}) == 0)", at, k, mask_k);
  }
  return e.empty() ? "1" : e;
}

// The length of segment `seg` as the text reads it.
std::string Emitter::segment_length(const std::vector<plan::GlobAtom>& seg, bool words) {
  return words && all_literal(seg) ? fmt::format("(__u32){}", number(seg.size())) : fmt::format("{}u", seg.size());
}

// The rest of a predicate whose pattern is plain bytes, whole or followed by
// a star (`comm == "bash"`, `comm ~ "bash*"`, the most common), matched
// without the string's length: no byte of a pattern is a NUL, so its bytes
// matching means the string is at least as long, and a whole string's next
// byte is its NUL, matched as one more byte of the segment. The length's
// loop over the string is most of such a predicate's cost. None for any
// other pattern.
std::optional<std::string> Emitter::plain_match(const plan::StringMatch& m, const std::string& no,
                                                const std::string& yes) {
  const bool exact = !m.trailing_star;
  if (m.leading_star || m.segments.size() > 1 || (!m.segments.empty() && !all_literal(m.segments[0])))
    return std::nullopt;
  std::vector<plan::GlobAtom> seg = m.segments.empty() ? std::vector<plan::GlobAtom>{} : m.segments[0];
  if (exact) seg.push_back(plan::GlobAtom{});  // a Literal NUL
  std::string o;
  if (!seg.empty()) o += fmt::format("  if (!({}))\n    return {};\n", segment_match(seg, "", true), no);
  return o + fmt::format("  return {};\n}}\n\n", yes);
}

// Emits strpred_<n>(): copies the string to the per-CPU buffer and matches it.
size_t Emitter::string_predicate(const plan::FilterTerm& t) {
  const size_t n = next_predicate_++;
  const bool negate = t.op == parse::CompareOp::Ne;
  const std::string no = negate ? "1" : "0";
  const std::string yes = negate ? "0" : "1";
  std::string o = fmt::format(
      "static __attribute__((noinline)) int strpred_{}(const void *rec, const struct histd_common *c) {{\n", n);
  o += "  (void)rec;\n  (void)c;\n  struct histd_str *b = histd_str_buf();\n  if (!b)\n    return 0;\n";
  o += load_string(t.field);
  const plan::StringMatch& m = t.match;
  if (auto plain = plain_match(m, no, yes)) {
    helpers += o + *plain;
    return n;
  }
  const uint32_t longest = longest_string(t.field);
  o += fmt::format("  __u32 len = histd_strlen(b, {}u);\n  __u32 pos = 0, end = len;\n  (void)pos;\n  (void)end;\n",
                   longest);
  size_t total = 0;
  for (const auto& seg : m.segments) total += seg.size();
  const bool exact = !m.leading_star && !m.trailing_star && m.segments.size() <= 1;
  // Words, and lengths as numbers, only where nothing is searched for
  // between stars (an exact pattern included: one segment, two anchors):
  // with a search after them the verifier walked the searches' loops one
  // inside the other (`k*worker*/*` past its million instructions).
  const size_t anchored = (m.leading_star ? 0 : 1) + (m.trailing_star ? 0 : 1);
  const bool words = m.segments.size() <= anchored;
  const std::string least = words ? fmt::format("(__u32){}", number(total)) : fmt::format("{}u", total);
  o += fmt::format("  if (len {} {})\n    return {};\n", exact ? "!=" : "<", least, no);
  if (exact) {
    if (!m.segments.empty())
      o += fmt::format("  if (!({}))\n    return {};\n", segment_match(m.segments[0], "", words), no);
    o += fmt::format("  return {};\n}}\n\n", yes);
    helpers += o;
    return n;
  }
  size_t first = 0, last = m.segments.size();  // [first, last) are searched
  if (!m.leading_star && !m.segments.empty()) {
    o += fmt::format("  if (!({}))\n    return {};\n", segment_match(m.segments[0], "", words), no);
    o += fmt::format("  pos = {};\n", segment_length(m.segments[0], words));
    first = 1;
  }
  if (!m.trailing_star && last > first) {
    const auto& seg = m.segments[last - 1];
    o += fmt::format("  end = len - {};\n", segment_length(seg, words));
    o += fmt::format("  if (!({}))\n    return {};\n", segment_match(seg, "end", words), no);
    --last;
  }
  for (size_t k = first; k < last; ++k) o += search(m.segments[k], no, longest);
  o += fmt::format("  return {};\n}}\n\n", yes);
  helpers += o;
  return n;
}

// Searches over strings longer than this go through bpf_loop().
constexpr uint32_t kLongestInlineSearch = 16;

// The leftmost place of a middle segment from pos on, before end; pos
// moves past it. Matched a byte at a time with its bytes and length in the
// text, whatever its atoms: with a word compare here, or a length read from
// histd_k[], the verifier walked two such loops one inside the other (774k
// instructions for `*bin*/e*v`, against 57k so). The loop stops at the
// longest the string can be (`longest`), which the verifier walks instead
// of HISTD_STR_MAX: a comm's searches are 16 places each, not 256.
std::string Emitter::search(const std::vector<plan::GlobAtom>& seg, const std::string& no, uint32_t longest) {
  if (longest > kLongestInlineSearch) return loop_search(seg, no, longest);
  return fmt::format(
      "  {{\n    int found = 0;\n    __u32 p;\n    for (p = pos; p < {}u; p++) {{\n"
      "      if (p + {}u > end)\n        break;\n      if ({}) {{\n        found = 1;\n        break;\n      }}\n    "
      "}}\n"
      "    if (!found)\n      return {};\n    pos = histd_forget(&b->pos, p + {}u);\n  }}\n",
      longest, seg.size(), segment_expr(seg, "p", true), no, seg.size());
}

// The same over a longer string, one place a bpf_loop() round: the
// verifier checks the callback, not each place, where the loops written
// out took it past its million instructions at the third search of two
// bytes over a path (`*ab*cd*ef*`). The callback goes to `helpers` before
// the predicate that calls it.
std::string Emitter::loop_search(const std::vector<plan::GlobAtom>& seg, const std::string& no, uint32_t longest) {
  const size_t n = next_search_++;
  helpers += fmt::format(
      "static long histd_search_{0}(__u32 i, void *ctx) {{\n  struct histd_search *s = ctx;\n"
      "  struct histd_str *b = s->b;\n  (void)b;\n  __u32 p = s->pos + i;\n"
      "  if (p + {1}u > s->end)\n    return 1;\n  if ({2}) {{\n    s->at = p + 1;\n    return 1;\n  }}\n"
      "  return 0;\n}}\n\n",
      n, seg.size(), segment_expr(seg, "p", true));
  return fmt::format(
      "  {{\n    struct histd_search st = {{.b = b, .pos = pos, .end = end, .at = 0}};\n"
      "    bpf_loop({0}u, histd_search_{1}, &st, 0);\n    if (!st.at)\n      return {2};\n"
      "    pos = histd_forget(&b->pos, st.at - 1 + {3}u);\n  }}\n",
      longest, n, no, seg.size());
}

// The longest a string of field `a` can be in b->s, whose NUL follows it:
// a comm's 15 (and its NUL), a char array's size (load_string puts a NUL
// after it), a dynamic string's HISTD_STR_MAX.
uint32_t Emitter::longest_string(const FieldAccess& a) {
  if (a.source == Source::CurrentComm) return 16;
  if (a.kind == catalog::FieldKind::CharArray) return std::min<uint32_t>(a.size, 256);
  return 256;
}

std::string Emitter::load_string(const FieldAccess& a) {
  using catalog::FieldKind;
  if (a.source == Source::CurrentComm) return "  histd_comm(c, b->s, 16);\n";
  // A char array may fill its field without a NUL: one is put after it.
  if (a.kind == FieldKind::CharArray) {
    const uint32_t size = std::min<uint32_t>(a.size, 256);
    return fmt::format("  __builtin_memcpy(b->s, (const char *)rec + {}u, {}u);\n  b->s[{}u] = 0;\n", a.offset, size,
                       size);
  }
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
