// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: any bytes as a tracefs format file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "histd/catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto format = histd::catalog::parse_format(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (format) {
    for (const auto& f : format->fields) (void)format->find(f.name);
    (void)format->record_size();
  }
  return 0;
}
