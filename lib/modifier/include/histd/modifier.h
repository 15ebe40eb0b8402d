// SPDX-License-Identifier: GPL-2.0-only
// The field modifiers (".hex", ".sym-offset", ".buckets=N", ...): one table,
// one row per modifier, read by every stage that treats them — the parser
// (names), the planner (where each is allowed, the key transform, the
// display), the printed trigger line and the renderers (JSON member names).
// The kernel keeps them the same way, as rows of hist_field_flags and
// hist_field_name(); adding a modifier adds a row here, and code only where
// it computes something new (a KeyTransform in codegen, a display in render).
//
// Below every stage: it includes only table.h's display enums. Pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "histd/table.h"

namespace histd::modifier {

enum class Modifier {
  Hex,
  Sym,
  SymOffset,
  Execname,
  Syscall,
  Log2,
  Buckets,  // .buckets=N or .bucket=N; N in parse::ModifierUse::buckets
  Usecs,
  Percent,
  Graph,
  Stacktrace,
};

// How a key's stored value is derived from the field's value (plan and
// codegen read it as plan::KeyTransform).
enum class KeyTransform {
  None,
  Log2,     // ilog2(roundup_pow_of_two(v))
  Buckets,  // (v / buckets) * buckets
  Usecs,    // common_timestamp.usecs: ns / 1000
};

// Whether a modifier may follow a field in one place: a key, a value, or an
// operand of an expression or variable ("$ts0=common_timestamp.usecs").
enum class Use {
  Refused,  // the kernel's "Invalid field modifier"
  Allowed,
  Unsupported,  // the kernel takes it, histd does not (yet)
};

// The field a modifier needs, where it is allowed; any other field is
// refused with "Invalid field modifier".
enum class Needs {
  Number,     // any numeric field
  CommonPid,  // common_pid (.execname)
  Timestamp,  // common_timestamp (.usecs)
  Stack,      // a stack field: a synthetic event's unsigned long[] (.stacktrace)
};

struct ModifierInfo {
  Modifier kind = Modifier::Hex;
  std::string_view name;      // as written and printed: "sym-offset", "buckets"
  std::string_view alias;     // also accepted when written ("bucket"), or empty
  bool takes_number = false;  // written "<name>=N", N > 0 (.buckets)
  Use key = Use::Refused;
  Use value = Use::Refused;
  Use operand = Use::Refused;  // in an expression: display-only modifiers leave the value as it is
  // Where the modifier is allowed, the field it needs: for a key and a value
  // (`needs`), and for an operand of an expression (`operand_needs`).
  Needs needs = Needs::Number;
  Needs operand_needs = Needs::Number;
  KeyTransform transform = KeyTransform::None;  // of a key; Usecs also converts a value or operand
  table::KeyDisplay key_display = table::KeyDisplay::Decimal;
  table::ValDisplay val_display = table::ValDisplay::Decimal;
  // A key shown as a symbol is a kernel address whatever its field's type
  // (render::Options::hide_kernel_addresses hides it).
  bool key_is_address = false;
};

// Every modifier, in the order of the Modifier enum.
std::span<const ModifierInfo> modifiers();
const ModifierInfo& info(Modifier m);

// The modifier written as `text` after a field's '.', and its number
// ("buckets=10" -> Buckets, 10); nullptr for an unknown modifier or a
// missing or zero number.
struct Written {
  const ModifierInfo* info = nullptr;
  uint64_t number = 0;
};
Written find(std::string_view text);

// As the trigger line prints it, without the '.': "sym-offset", "buckets=10".
std::string printed(Modifier m, uint64_t number);

// The modifier whose key display is `d`, for naming a rendered key
// ("call_site.sym" in JSON); nullptr for displays no modifier chooses
// (Decimal, String, Stacktrace).
const ModifierInfo* by_key_display(table::KeyDisplay d);

// The field values a key's stored value `v` stands for, both ends included
// (the one definition of the kernel's buckets: the metrics' `le` bounds and
// histctl's percentiles read it). A .log2 key stores ilog2(roundup_pow_of_two(x)):
// 2^v holds (2^(v-1), 2^v], so [2^(v-1)+1, 2^v], and 2^0 holds 0 and 1
// (2^64 holds up to 2^64-1; v is at most 64). A .buckets=N key stores
// (x / N) * N: v holds [v, v+N-1] (at most 2^64-1). Any other key holds v.
struct KeyBounds {
  uint64_t lower = 0;
  uint64_t upper = 0;
  friend bool operator==(const KeyBounds&, const KeyBounds&) = default;
};
KeyBounds key_bounds(KeyTransform transform, uint64_t buckets, uint64_t v);

}  // namespace histd::modifier
