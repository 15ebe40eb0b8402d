// SPDX-License-Identifier: GPL-2.0-only
#include <array>

#include "histd/enum_rows.h"
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

// Stacktrace is the last display.
static_assert(rows_follow_enum(kTraits, &KeyDisplayTraits::display, static_cast<size_t>(Stacktrace) + 1),
              "a row per value, in the enum's order");

}  // namespace

const KeyDisplayTraits& key_traits(KeyDisplay display) { return kTraits[static_cast<size_t>(display)]; }

}  // namespace histd::table
