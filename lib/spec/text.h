// Small text helpers shared by the parsers.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "histd/diagnostic.h"

namespace histd::spec {

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

// The first "if" with white space on both sides, as the kernel splits a
// trigger from its filter; npos if none.
size_t find_filter_keyword(std::string_view s);

// A command of `max_bytes` or more: refused with the caret on its last byte allowed.
inline Diagnostic too_long(std::string_view line, size_t max_bytes) {
  const auto end = static_cast<uint32_t>(max_bytes);
  std::string detail = max_bytes == 4096 ? std::string() : "a printed line may take " + std::to_string(max_bytes - 1) + " bytes";
  return Diagnostic{ErrorCode::CommandTooLong, Span{end - 1, end}, std::string(line.substr(0, max_bytes)),
                    std::move(detail)};
}

}  // namespace histd::spec
