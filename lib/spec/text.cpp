#include "spec/text.h"

namespace histd::spec {

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
    if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
    else return std::nullopt;
    if (d >= base) return std::nullopt;
    if (v > (UINT64_MAX - d) / base) return std::nullopt;
    v = v * base + d;
  }
  return v;
}

size_t find_filter_keyword(std::string_view s) {
  for (size_t i = 1; i + 2 < s.size(); ++i)
    if (s[i] == 'i' && s[i + 1] == 'f' && is_space(s[i - 1]) && is_space(s[i + 2])) return i;
  return std::string_view::npos;
}

}  // namespace histd::spec
