// SPDX-License-Identifier: GPL-2.0-only
// Shared by the renderer tests (metrics, page): tables filled by hand.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "histd/readout.h"
#include "test_support.h"

namespace histd::testing {

// A table key of 8-byte words, as the BPF side lays it out.
inline std::vector<uint8_t> key_of(std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> k;
  for (uint64_t w : words) {
    const size_t at = k.size();
    k.resize(at + 8);
    std::memcpy(k.data() + at, &w, 8);
  }
  return k;
}

// An empty table of the trigger `cmd` (on kmem:kmalloc, as plan_ok plans it).
inline readout::HistTable table_of(const std::string& cmd) {
  readout::HistTable t;
  t.plan = plan_ok(cmd);
  t.table = t.plan.columns();
  return t;
}

}  // namespace histd::testing
