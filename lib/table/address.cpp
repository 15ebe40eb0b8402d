// SPDX-License-Identifier: GPL-2.0-only
// Which columns may hold kernel addresses (table::AddressKind).
#include <string>

#include "histd/table.h"

namespace histd::table {

AddressKind address_kind(std::string_view c_type) {
  if (c_type.find('*') != std::string_view::npos) return AddressKind::Pointer;
  // Qualifiers and spacing aside, the spellings of unsigned long.
  std::string words;
  size_t i = 0;
  while (i < c_type.size()) {
    while (i < c_type.size() && c_type[i] == ' ') ++i;
    size_t end = i;
    while (end < c_type.size() && c_type[end] != ' ') ++end;
    const std::string_view w = c_type.substr(i, end - i);
    if (!w.empty() && w != "const" && w != "volatile") words += (words.empty() ? "" : " ") + std::string(w);
    i = end;
  }
  if (words == "unsigned long" || words == "unsigned long int" || words == "long unsigned int")
    return AddressKind::Word;
  return AddressKind::None;
}

}  // namespace histd::table
