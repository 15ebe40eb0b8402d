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

namespace {

// The kernel's pid list holds pids below this (pid_list.h's MAX_PID).
constexpr uint32_t kPidListLimit = 1u << 30;
// trace_pid_write()'s parser takes words of up to PID_BUF_SIZE bytes.
constexpr size_t kPidWordMax = 127;

int digit_of(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// kstrtoul(word, 0, ...): the radix from the prefix, every byte a digit of
// it (the kernel stops at the first other byte and refuses what is left).
Result<uint64_t, int> word_number(std::string_view w) {
  if (!w.empty() && w.front() == '+') w.remove_prefix(1);
  unsigned base = 10;
  if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X') && digit_of(w[2]) < 16) {
    base = 16;
    w.remove_prefix(2);
  } else if (!w.empty() && w[0] == '0') {
    base = 8;
  }
  if (w.empty()) return unexpected(EINVAL);
  uint64_t value = 0;
  for (char c : w) {
    const int d = digit_of(c);
    if (d >= static_cast<int>(base)) return unexpected(EINVAL);
    if (value > (UINT64_MAX - static_cast<uint64_t>(d)) / base) return unexpected(EINVAL);
    value = value * base + static_cast<uint64_t>(d);
  }
  return value;
}

bool separates(char c) { return c == '\0' || c == ' ' || (c >= '\t' && c <= '\r'); }

}  // namespace

Result<std::vector<uint32_t>, int> parse_pid_list(std::string_view text) {
  std::vector<uint32_t> pids;
  size_t i = 0;
  while (i < text.size()) {
    if (separates(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && !separates(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    i = end;
    if (word.size() > kPidWordMax) return unexpected(EINVAL);
    auto value = word_number(word);
    if (!value) return unexpected(value.error());
    // (pid_t)val, then the list's unsigned pid.
    const auto pid = static_cast<uint32_t>(*value);
    if (pid >= kPidListLimit) return unexpected(EPERM);
    pids.push_back(pid);
  }
  return pids;
}

}  // namespace histd::fs
