// SPDX-License-Identifier: GPL-2.0-only
#include "histd/text.h"

namespace histd {

std::optional<uint64_t> parse_u64(std::string_view s) {
  unsigned base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    unsigned d;
    if (c >= '0' && c <= '9')
      d = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<unsigned>(c - 'A' + 10);
    else
      return std::nullopt;
    if (d >= base) return std::nullopt;
    if (v > (UINT64_MAX - d) / base) return std::nullopt;
    v = v * base + d;
  }
  return v;
}

std::vector<Piece> split(const Piece& p, char sep) {
  std::vector<Piece> out;
  size_t start = 0;
  for (size_t i = 0; i <= p.text.size(); ++i) {
    if (i == p.text.size() || p.text[i] == sep) {
      out.push_back(Piece{p.text.substr(start, i - start), p.begin + start});
      start = i + 1;
    }
  }
  return out;
}

Piece trim(const Piece& p) {
  size_t b = 0, e = p.text.size();
  while (b < e && is_space(p.text[b])) ++b;
  while (e > b && is_space(p.text[e - 1])) --e;
  return p.sub(b, e - b);
}

}  // namespace histd
