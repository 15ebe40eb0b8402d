// SPDX-License-Identifier: GPL-2.0-only
// Numbers written to tracefs control files (events/synthetic/<name>/enable,
// snapshot, set_event_pid), read as the kernel reads them. Pure: no FUSE here, so the
// bad-input tests can call it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "histd/result.h"

namespace histd::fs {

// kstrtoul_from_user(buf, count, 10): the first 22 bytes only; an optional
// '+', decimal digits, at most one trailing newline. Anything else is
// EINVAL ("", " 1", "1 ", "-1", "0x1", "1\n\n"); a number past 2^64-1 is ERANGE.
// The string ends at its first NUL, as the kernel's copy does ("1\0x" is 1).
Result<uint64_t, int> parse_control_number(std::string_view text);

// events/<system>/<event>/enable: 0 or 1 (event_enable_write()); any other
// number is EINVAL.
Result<bool, int> parse_enable(std::string_view text);

// A write to set_event_pid, as the kernel's trace_pid_write() reads it:
// words separated by blanks or NULs, each a number as kstrtoul(word, 0)
// takes it (decimal, 0x hex or 0 octal, an optional '+'), cut to a pid_t;
// EINVAL for a word that is not one (or longer than 127 bytes), EPERM for
// a pid the kernel's pid list cannot hold (from 2^30). All or nothing.
Result<std::vector<uint32_t>, int> parse_pid_list(std::string_view text);

}  // namespace histd::fs
