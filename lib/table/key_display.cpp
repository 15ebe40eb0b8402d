// SPDX-License-Identifier: GPL-2.0-only
#include <array>

#include "histd/table.h"

namespace histd::table {

namespace {

using enum KeyDisplay;
constexpr KeyHolds kNumber = KeyHolds::Number, kString = KeyHolds::String, kStack = KeyHolds::Stack;

// clang-format off
constexpr KeyDisplayTraits kTraits[] = {
  // display     holds    bucketed needs_comm numeric_label
  {Decimal,      kNumber, false,   false,     true},
  {Hex,          kNumber, false,   false,     true},
  {Sym,          kNumber, false,   false,     false},
  {SymOffset,    kNumber, false,   false,     false},
  {Execname,     kNumber, false,   true,      false},
  {Syscall,      kNumber, false,   false,     false},
  {Log2,         kNumber, true,    false,     true},
  {Buckets,      kNumber, true,    false,     true},
  {String,       kString, false,   false,     false},
  {Stacktrace,   kStack,  false,   false,     false},
};
// clang-format on

// Each display's row where the enum puts it: a display without one fails
// the build here.
constexpr bool rows_in_order() {
  for (size_t i = 0; i < std::size(kTraits); ++i)
    if (static_cast<size_t>(kTraits[i].display) != i) return false;
  return std::size(kTraits) == static_cast<size_t>(Stacktrace) + 1;
}
static_assert(rows_in_order());

}  // namespace

const KeyDisplayTraits& key_traits(KeyDisplay display) { return kTraits[static_cast<size_t>(display)]; }

}  // namespace histd::table
