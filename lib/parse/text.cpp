// SPDX-License-Identifier: GPL-2.0-only
#include "parse/text.h"

namespace histd::parse {

size_t find_filter_keyword(std::string_view s) {
  for (size_t i = 1; i + 2 < s.size(); ++i)
    if (s[i] == 'i' && s[i + 1] == 'f' && is_space(s[i - 1]) && is_space(s[i + 2])) return i;
  return std::string_view::npos;
}

}  // namespace histd::parse
