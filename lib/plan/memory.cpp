// SPDX-License-Identifier: GPL-2.0-only
// The map-memory formula: what the kernel charges for the engine's maps of a
// trigger. The constants are the kernel's struct sizes on 64-bit machines
// (kernel/bpf/hashtab.c, arraymap.c), measured against fdinfo's memlock on
// 6.18 (map_mem_usage, kernels 6.4+); docs/design/limits.md states the formula and
// its tolerance.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "hist_shared.h"
#include "histd/plan.h"
#include "histd/plan_memory.h"

namespace histd::plan {

namespace {

// Every hash element starts with a header (its hash-list node, the per-CPU
// value pointer or LRU node, the hash); keys and values follow, 8-aligned.
constexpr uint64_t kHashElemHeader = 48;
// One bucket per power of two at or above max_entries: list head and lock.
constexpr uint64_t kHashBucket = 16;
// The map's own struct, and its lock-depth counters: 8 ints per CPU.
constexpr uint64_t kHashHeader = 832;
constexpr uint64_t kHashHeaderPerCpu = 32;
// struct bpf_array.
constexpr uint64_t kArrayHeader = 312;

uint64_t round8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

}  // namespace

uint64_t hash_map_bytes(uint32_t key_size, uint32_t value_size, uint32_t max_entries, bool per_cpu,
                        uint32_t possible_cpus) {
  const uint64_t entries = max_entries, cpus = possible_cpus == 0 ? 1 : possible_cpus;
  const uint64_t value = round8(value_size);
  // A per-CPU element holds a pointer to its per-CPU values instead of the value.
  const uint64_t elem = kHashElemHeader + round8(key_size) + (per_cpu ? 8 : value);
  uint64_t bytes =
      kHashHeader + kHashHeaderPerCpu * cpus + kHashBucket * std::bit_ceil(entries == 0 ? uint64_t{1} : entries);
  if (per_cpu) {
    bytes += entries * (elem + value * cpus);
  } else {
    // A shared hash preallocates one spare element per CPU (for updates of
    // existing keys) and a per-CPU pointer to it.
    bytes += (entries + cpus) * elem + 8 * cpus;
  }
  return bytes;
}

uint64_t array_map_bytes(uint32_t value_size, uint32_t max_entries, bool per_cpu, uint32_t possible_cpus) {
  const uint64_t entries = max_entries, cpus = possible_cpus == 0 ? 1 : possible_cpus;
  const uint64_t value = round8(value_size);
  // A per-CPU array keeps a pointer per entry to that entry's per-CPU values.
  return kArrayHeader + (per_cpu ? entries * (8 + value * cpus) : entries * value);
}

MapMemory map_memory(const HistPlan& plan, uint32_t possible_cpus) {
  MapMemory m;
  m.table = plan.table_map == TableMap::Log2Slots
                ? array_map_bytes(plan.value_size(), plan.table_map_entries(), true, possible_cpus)
                : hash_map_bytes(plan.key_size, plan.table_value_size(), plan.max_entries, plan.per_cpu_table(),
                                 possible_cpus);
  m.stats = array_map_bytes(sizeof(histd_table_stats), 1, true, possible_cpus);
  if (plan.separate_var_map())
    m.vars = hash_map_bytes(plan.key_size, plan.var_record_size, plan.max_entries, false, possible_cpus);
  if (plan.hot_slots > 0) m.hot = array_map_bytes(plan.hot_value_size(), plan.hot_slots, true, possible_cpus);
  return m;
}

TableMap choose_table_map(const HistPlan& p, const TablePolicy& policy) {
  // A lone .log2 key fits a 65-slot array, which no size can overflow (the
  // smallest is 128). Triggers with variables or actions, and named tables,
  // keep a hash: their variable records and sharers are keyed by the key
  // struct.
  const bool lone_log2 = p.keys.size() == 1 && p.keys[0].transform == KeyTransform::Log2;
  if (lone_log2 && !p.has_var_map() && p.actions.empty() && !p.name && !p.saves_comm() &&
      p.max_entries >= HistPlan::kLog2Slots)
    return TableMap::Log2Slots;
  if (p.has_var_map() && !p.name) return TableMap::SharedWithRecords;
  const uint64_t per_cpu = hash_map_bytes(p.key_size, p.value_size(), p.max_entries, true, policy.possible_cpus);
  return per_cpu > policy.percpu_limit ? TableMap::SharedHash : TableMap::PerCpuHash;
}

uint32_t choose_hot_slots(const HistPlan& p) {
  // Named tables are shared by other triggers' programs, and a trigger with
  // variables, references or actions reads or writes more than the values
  // per event: those keep the plain path.
  if (p.table_map != TableMap::PerCpuHash || p.name || p.has_var_map() || !p.refs.empty() || !p.actions.empty() ||
      p.key_size == 0 || p.key_size > kHotKeyMax || p.key_size % 8 != 0)
    return 0;
  return std::min(p.max_entries, kHotSlotsMax);
}

uint32_t hot_slot_index(std::span<const uint8_t> key, uint32_t slots) {
  uint64_t h = 0;
  for (size_t at = 0; at + 8 <= key.size(); at += 8) {
    uint64_t word = 0;
    std::memcpy(&word, key.data() + at, sizeof(word));
    h = (h ^ word) * kHotHashMultiplier;
  }
  // The top bits: a multiplicative hash mixes the low bits of the key up there.
  const int bits = std::countr_zero(slots);
  return bits == 0 ? 0 : static_cast<uint32_t>(h >> (64 - bits));
}

std::string debug_memory(const HistPlan& plan, const MapMemory& memory, uint32_t possible_cpus,
                         const std::string& shared_with) {
  std::string out;
  if (plan.separate_var_map())
    out += fmt::format("  variables map: hash, max_entries: {}, key_size: {}, value_size: {}\n", plan.max_entries,
                       plan.key_size, plan.var_record_size);
  if (plan.hot_slots > 0)
    out += fmt::format("  hot slots: percpu_array, max_entries: {}, key_size: 4, value_size: {}\n", plan.hot_slots,
                       plan.hot_value_size());
  out += fmt::format("  map memory: {} bytes (table {}, stats {}, variables {}{}; {} possible CPUs)\n", memory.total(),
                     memory.table, memory.stats, memory.vars,
                     memory.hot > 0 ? fmt::format(", hot slots {}", memory.hot) : std::string(), possible_cpus);
  if (!shared_with.empty())
    out +=
        fmt::format("  table and stats shared with the other triggers of named table {}: counted once\n", shared_with);
  return out;
}

}  // namespace histd::plan
