// SPDX-License-Identifier: GPL-2.0-only
#include "fs/control_value.h"

#include <cerrno>

namespace histd::fs {

Result<uint64_t, int> parse_control_number(std::string_view text) {
  // The kernel copies at most sizeof(buf) - 1 bytes of the write into a
  // buffer sized for the longest u64 with a sign and a newline.
  text = text.substr(0, 22);
  text = text.substr(0, text.find('\0'));
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text.empty()) return unexpected(EINVAL);
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return unexpected(EINVAL);
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return unexpected(ERANGE);
    value = value * 10 + digit;
  }
  return value;
}

Result<bool, int> parse_enable(std::string_view text) {
  auto v = parse_control_number(text);
  if (!v) return unexpected(v.error());
  if (*v > 1) return unexpected(EINVAL);
  return *v == 1;
}

}  // namespace histd::fs
