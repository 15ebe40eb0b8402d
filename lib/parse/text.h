// SPDX-License-Identifier: GPL-2.0-only
// Helpers of the hist command parsers (lib/parse only); those other parsers
// share are in histd/text.h.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "histd/diagnostic.h"
#include "histd/text.h"

namespace histd::parse {

// The first "if" with white space on both sides, as the kernel splits a
// trigger from its filter; npos if none.
size_t find_filter_keyword(std::string_view s);

// A command of `max_bytes` or more: refused with the caret on its last byte allowed.
inline Diagnostic too_long(std::string_view line, size_t max_bytes) {
  const auto end = static_cast<uint32_t>(max_bytes);
  std::string detail =
      max_bytes == 4096 ? std::string() : "a printed line may take " + std::to_string(max_bytes - 1) + " bytes";
  return Diagnostic{ErrorCode::CommandTooLong, Span{end - 1, end}, std::string(line.substr(0, max_bytes)),
                    std::move(detail)};
}

}  // namespace histd::parse
