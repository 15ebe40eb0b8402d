// SPDX-License-Identifier: GPL-2.0-only
// Tables of rows indexed by an enum (a row per key display, per event
// source): checked at compile time to have a row for each value, where the
// value puts it, so that a new value without its row fails the build.
#pragma once

#include <cstddef>

namespace histd {

// Whether `rows` holds `count` rows and row i's `key` is the enum's value i.
template <typename Row, std::size_t N, typename Enum>
constexpr bool rows_follow_enum(const Row (&rows)[N], Enum Row::*key, std::size_t count) {
  if (N != count) return false;
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(rows[i].*key) != i) return false;
  return true;
}

}  // namespace histd
