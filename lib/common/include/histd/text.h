// SPDX-License-Identifier: GPL-2.0-only
// Text helpers every parser shares (hist commands, synthetic event
// definitions, the configuration directory): character classes, trimming,
// the kernel's kstrtoull, and slices of a command that know where they
// start in it (for a Diagnostic's span).
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "histd/diagnostic.h"

namespace histd {

inline bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
inline bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// kstrtoull(s, 0): decimal, 0x hex, leading-0 octal; nullopt on junk or overflow.
std::optional<uint64_t> parse_u64(std::string_view s);

// A slice of the logged command and where it starts in it.
struct Piece {
  std::string_view text;
  size_t begin = 0;
  Span span() const { return Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + text.size())}; }
  Piece sub(size_t pos, size_t n = std::string_view::npos) const {
    const std::string_view t = text.substr(pos, n);
    return Piece{t, begin + pos};
  }
};

// The pieces between `sep`s (empty ones included), as strsep() leaves them.
std::vector<Piece> split(const Piece& p, char sep);
Piece trim(const Piece& p);

}  // namespace histd
