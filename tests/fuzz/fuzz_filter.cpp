// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: any bytes as a filter (after "if "), parsed and typed
// against sched:sched_switch, globs compiled.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.h"
#include "histd/parse.h"
#include "histd/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto formats = histd::fuzz::fixture_formats();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto filter = histd::parse::parse_filter(text, 0, text);
  (void)histd::plan::compile_glob(text);
  if (!filter) return 0;
  for (const auto& format : formats) (void)histd::plan::plan_filter(*filter, *format, text);
  return 0;
}
