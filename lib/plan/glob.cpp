// SPDX-License-Identifier: GPL-2.0-only
#include "histd/plan.h"

namespace histd::plan {

namespace {

// Parses "[...]" starting at pattern[i] == '['; returns the index after ']'
// or npos when unterminated. As in glob_match(), a ']' right after '[' or
// "[!" is a member, and "a-z" is a range.
size_t parse_class(std::string_view pattern, size_t i, GlobAtom& atom) {
  size_t j = i + 1;
  atom = GlobAtom{GlobAtom::Kind::Class};
  if (j < pattern.size() && pattern[j] == '!') {
    atom.negated = true;
    ++j;
  }
  bool first = true;
  while (j < pattern.size()) {
    const uint8_t c = static_cast<uint8_t>(pattern[j]);
    if (c == ']' && !first) return j + 1;
    first = false;
    if (j + 2 < pattern.size() && pattern[j + 1] == '-' && pattern[j + 2] != ']') {
      uint8_t lo = c, hi = static_cast<uint8_t>(pattern[j + 2]);
      if (lo > hi) std::swap(lo, hi);
      atom.ranges.emplace_back(lo, hi);
      j += 3;
    } else {
      atom.ranges.emplace_back(c, c);
      ++j;
    }
  }
  return std::string_view::npos;
}

}  // namespace

StringMatch compile_glob(std::string_view pattern) {
  StringMatch m;
  m.segments.emplace_back();
  size_t i = 0;
  if (!pattern.empty() && pattern[0] == '*') m.leading_star = true;
  while (i < pattern.size()) {
    const char c = pattern[i];
    if (c == '*') {
      // Consecutive stars are one star.
      if (!m.segments.back().empty() || m.segments.size() == 1) m.segments.emplace_back();
      ++i;
      continue;
    }
    GlobAtom atom;
    if (c == '?') {
      atom.kind = GlobAtom::Kind::Any;
      ++i;
    } else if (c == '[') {
      size_t next = parse_class(pattern, i, atom);
      if (next == std::string_view::npos) {
        atom = GlobAtom{GlobAtom::Kind::Literal, '['};
        ++i;
      } else {
        i = next;
      }
    } else {
      atom.byte = static_cast<uint8_t>(c);
      ++i;
    }
    m.segments.back().push_back(std::move(atom));
  }
  m.trailing_star = !pattern.empty() && pattern.back() == '*';
  // Drop the empty segments the stars at either end produced.
  if (m.leading_star && !m.segments.empty() && m.segments.front().empty()) m.segments.erase(m.segments.begin());
  if (m.trailing_star && !m.segments.empty() && m.segments.back().empty()) m.segments.pop_back();
  return m;
}

StringMatch exact_match(std::string_view text) {
  StringMatch m;
  m.segments.emplace_back();
  for (char c : text) m.segments.back().push_back(GlobAtom{GlobAtom::Kind::Literal, static_cast<uint8_t>(c)});
  return m;
}

}  // namespace histd::plan
