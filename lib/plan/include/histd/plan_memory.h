// SPDX-License-Identifier: GPL-2.0-only
// The maps a trigger's plan takes: their memory as the kernel charges it,
// the table map the planner chooses and the hot slots (split from plan.h,
// whose types these read).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "histd/plan.h"

namespace histd::plan {

// ---- map memory ----------------------------------------------------------------

// What the kernel charges for the BPF maps the engine creates for one
// trigger (the `memlock` of fdinfo and `bpftool map show`), estimated from
// the layout. The one formula histd uses, both to enforce
// EngineOptions::limits.max_map_memory and to report memory; docs/design/limits.md states
// it and tests/bpf/limits_test.cpp holds it against the kernel's figures.
struct MapMemory {
  uint64_t table = 0;  // the entries: a PERCPU_HASH, key -> one u64 per value
  uint64_t stats = 0;  // hits/drops: a one-slot PERCPU_ARRAY
  uint64_t vars = 0;   // the variable records: a HASH (0: the plan has none)
  uint64_t hot = 0;    // the hot slots: a PERCPU_ARRAY (0: the plan has none)
  uint64_t total() const { return table + stats + vars + hot; }
  friend bool operator==(const MapMemory&, const MapMemory&) = default;
};

// A preallocated hash map of `max_entries` (per-CPU values when `per_cpu`),
// on a machine with `possible_cpus` possible CPUs.
uint64_t hash_map_bytes(uint32_t key_size, uint32_t value_size, uint32_t max_entries, bool per_cpu,
                        uint32_t possible_cpus);
// An array map (per-CPU values when `per_cpu`).
uint64_t array_map_bytes(uint32_t value_size, uint32_t max_entries, bool per_cpu, uint32_t possible_cpus);
// The maps of one trigger with this plan.
MapMemory map_memory(const HistPlan& plan, uint32_t possible_cpus);

// The planner's choice of TableMap (HistPlan::table_map) for a plan whose
// keys, values, size, variables and actions are final.
TableMap choose_table_map(const HistPlan& plan, const TablePolicy& policy);
// How many hot slots a plan whose table map is chosen gets (0: none): only
// per-CPU hash tables of their own trigger, keys of at most kHotKeyMax
// bytes, no variables, references or actions.
uint32_t choose_hot_slots(const HistPlan& plan);
// The slot of `key` (key_size bytes, a multiple of 8) among `slots` (a power
// of two): the generated programs compute the same (codegen), and tests
// use it to make keys meet in one slot.
uint32_t hot_slot_index(std::span<const uint8_t> key, uint32_t slots);
// The multiplier of hot_slot_index, for codegen.
inline constexpr uint64_t kHotHashMultiplier = 0x9E3779B97F4A7C15ULL;
// hist_debug's memory lines for one trigger; `shared_with` names the named
// table whose maps it shares ("" when they are its own).
std::string debug_memory(const HistPlan& plan, const MapMemory& memory, uint32_t possible_cpus,
                         const std::string& shared_with);

}  // namespace histd::plan
