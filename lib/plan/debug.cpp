// SPDX-License-Identifier: GPL-2.0-only
// hist_debug: the kernel's hist_trigger_debug_show() layout, driven by the
// plan. Key slots are 8-byte aligned, so numbers show size 8 as in the
// kernel's samples; histd adds each key's offset in the key struct.
#include <fmt/format.h>

#include "histd/plan.h"

namespace histd::plan {

namespace {

void field_block(std::string& out, size_t index, const char* flags, const FieldAccess& a, const std::string& name,
                 uint32_t size, bool is_signed) {
  out += fmt::format("\n    hist_data->fields[{}]:\n      flags:\n        {}\n", index, flags);
  if (a.source == Source::Record || a.source == Source::CommonPid)
    out += fmt::format("      ftrace_event_field name: {}\n", name);
  out += fmt::format("      type: {}\n      size: {}\n      is_signed: {}\n", a.type, size, is_signed ? 1 : 0);
}

}  // namespace

std::string debug_fields(const HistPlan& p) {
  const size_t n_vals = p.vals.size();
  std::string out =
      fmt::format("  n_vals: {}\n  n_keys: {}\n  n_fields: {}\n", n_vals, p.keys.size(), n_vals + p.keys.size());
  out += "\n  val fields:\n";
  for (size_t i = 0; i < n_vals; ++i) {
    const ValField& v = p.vals[i];
    const char* flags = v.access.source == Source::Hitcount ? "VAL: HIST_FIELD_FL_HITCOUNT" : "VAL: normal u64 value";
    field_block(out, i, flags, v.access, v.name, 8, v.access.is_signed);
  }
  out += "\n  key fields:\n";
  for (size_t i = 0; i < p.keys.size(); ++i) {
    const KeyField& k = p.keys[i];
    field_block(out, n_vals + i, "HIST_FIELD_FL_KEY", k.access, k.name, k.size, k.access.is_signed);
    out += fmt::format("      key offset: {}\n", k.offset);
  }
  if (p.table_map == TableMap::Log2Slots)
    out += fmt::format("\n  map: percpu_array of the {} log2 slots, key_size: 4, value_size: {}\n",
                       p.table_map_entries(), p.value_size());
  else
    out += fmt::format("\n  map: {}, max_entries: {}, key_size: {}, value_size: {}\n",
                       p.records_in_table()
                           ? "hash (shared by all CPUs, atomic adds; the variable record after the values)"
                       : p.per_cpu_table() ? "percpu_hash"
                                           : "hash (shared by all CPUs, atomic adds)",
                       p.max_entries, p.key_size, p.table_value_size());
  return out;
}

}  // namespace histd::plan
