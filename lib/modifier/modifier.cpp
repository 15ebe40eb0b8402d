// SPDX-License-Identifier: GPL-2.0-only
#include "histd/modifier.h"

#include <iterator>

#include "histd/text.h"

namespace histd::modifier {

namespace {

using table::KeyDisplay;
using table::ValDisplay;

// What each modifier is, as the kernel's hist_field_flags and
// hist_field_name() have it, and what histd takes of it. Key-only modifiers
// that only choose how a key is printed (.sym, .execname, ...) leave an
// operand's value as it is, as the kernel ignores them there.
constexpr ModifierInfo kModifiers[] = {
    {.kind = Modifier::Hex,
     .name = "hex",
     .key = Use::Allowed,
     .value = Use::Allowed,
     .operand = Use::Allowed,
     .key_display = KeyDisplay::Hex,
     .val_display = ValDisplay::Hex},
    {.kind = Modifier::Sym,
     .name = "sym",
     .key = Use::Allowed,
     .operand = Use::Allowed,
     .key_display = KeyDisplay::Sym,
     .key_is_address = true},
    {.kind = Modifier::SymOffset,
     .name = "sym-offset",
     .key = Use::Allowed,
     .operand = Use::Allowed,
     .key_display = KeyDisplay::SymOffset,
     .key_is_address = true},
    {.kind = Modifier::Execname,
     .name = "execname",
     .key = Use::Allowed,
     .operand = Use::Allowed,
     .needs = Needs::CommonPid,
     .key_display = KeyDisplay::Execname},
    {.kind = Modifier::Syscall,
     .name = "syscall",
     .key = Use::Allowed,
     .operand = Use::Allowed,
     .key_display = KeyDisplay::Syscall},
    {.kind = Modifier::Log2,
     .name = "log2",
     .key = Use::Allowed,
     .transform = KeyTransform::Log2,
     .key_display = KeyDisplay::Log2},
    {.kind = Modifier::Buckets,
     .name = "buckets",
     .alias = "bucket",
     .takes_number = true,
     .key = Use::Allowed,
     .transform = KeyTransform::Buckets,
     .key_display = KeyDisplay::Buckets},
    {.kind = Modifier::Usecs,
     .name = "usecs",
     .key = Use::Allowed,
     .value = Use::Allowed,
     .operand = Use::Allowed,
     .needs = Needs::Timestamp,
     .operand_needs = Needs::Timestamp,
     .transform = KeyTransform::Usecs},
    {.kind = Modifier::Percent, .name = "percent", .value = Use::Allowed, .val_display = ValDisplay::Percent},
    {.kind = Modifier::Graph, .name = "graph", .value = Use::Allowed, .val_display = ValDisplay::Graph},
    // A stack field as a key: its frames, as common_stacktrace's.
    {.kind = Modifier::Stacktrace,
     .name = "stacktrace",
     .key = Use::Allowed,
     .needs = Needs::Stack,
     .key_display = KeyDisplay::Stacktrace,
     .key_is_address = true},
};

constexpr bool in_enum_order() {
  for (size_t i = 0; i < std::size(kModifiers); ++i)
    if (static_cast<size_t>(kModifiers[i].kind) != i) return false;
  return true;
}
static_assert(in_enum_order(), "info() indexes the table by Modifier");

// The number after "<name>=": the kernel's kstrtoul(), and N > 0.
bool number_after(std::string_view text, std::string_view name, uint64_t& number) {
  if (name.empty() || !text.starts_with(name) || text.size() <= name.size() || text[name.size()] != '=') return false;
  auto n = parse_u64(text.substr(name.size() + 1));
  if (!n || *n == 0) return false;
  number = *n;
  return true;
}

}  // namespace

std::span<const ModifierInfo> modifiers() { return kModifiers; }

const ModifierInfo& info(Modifier m) { return modifiers()[static_cast<size_t>(m)]; }

Written find(std::string_view text) {
  for (const ModifierInfo& m : kModifiers) {
    Written w;
    if (!m.takes_number) {
      if (text == m.name) return Written{&m, 0};
    } else if (number_after(text, m.name, w.number) || number_after(text, m.alias, w.number)) {
      w.info = &m;
      return w;
    }
  }
  return {};
}

std::string printed(Modifier m, uint64_t number) {
  const ModifierInfo& i = info(m);
  std::string s(i.name);
  if (i.takes_number) s += "=" + std::to_string(number);
  return s;
}

const ModifierInfo* by_key_display(table::KeyDisplay d) {
  // A stack is shown one way, whether common_stacktrace or a field's
  // .stacktrace: no modifier's form beside a raw one.
  if (d == KeyDisplay::Decimal || d == KeyDisplay::Stacktrace) return nullptr;
  for (const ModifierInfo& m : kModifiers)
    if (m.key == Use::Allowed && m.key_display == d) return &m;
  return nullptr;
}

KeyBounds key_bounds(KeyTransform transform, uint64_t buckets, uint64_t v) {
  switch (transform) {
    case KeyTransform::Log2: {
      if (v == 0) return {0, 1};
      if (v >= 64) return {(uint64_t{1} << 63) + 1, UINT64_MAX};
      return {(uint64_t{1} << (v - 1)) + 1, uint64_t{1} << v};
    }
    case KeyTransform::Buckets: {
      const uint64_t width = buckets == 0 ? 1 : buckets;
      return {v, v > UINT64_MAX - (width - 1) ? UINT64_MAX : v + (width - 1)};
    }
    case KeyTransform::None:
    case KeyTransform::Usecs:
      break;
  }
  return {v, v};
}

}  // namespace histd::modifier
