// SPDX-License-Identifier: GPL-2.0-only
// The map-memory formula (plan::map_memory), as data. How close it is to the
// kernel's own figures is tests/bpf/limits_test.cpp's business.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "histd/pipeline.h"
#include "histd/plan.h"
#include "histd/plan_memory.h"
#include "test_support.h"

namespace histd::plan {
namespace {

using histd::testing::plan_ok;

TEST(MapMemory, PerCpuHashIsElementsValuesPerCpuBucketsAndAHeader) {
  // 2048 x (48 + 8 + 8) + 2048 x 8 x 2 CPUs + 2048 x 16 + 832 + 32 x 2
  EXPECT_EQ(hash_map_bytes(8, 8, 2048, true, 2), 131072u + 32768u + 32768u + 896u);
  // keys and values round up to 8; buckets to a power of two
  EXPECT_EQ(hash_map_bytes(12, 12, 1000, true, 4), 1000u * (48 + 16 + 8) + 1000u * 16 * 4 + 1024u * 16 + 832 + 32 * 4);
}

TEST(MapMemory, SharedHashHasASpareElementPerCpu) {
  EXPECT_EQ(hash_map_bytes(8, 24, 2048, false, 2), 2050u * (48 + 8 + 24) + 2u * 8 + 2048u * 16 + 896);
}

TEST(MapMemory, Arrays) {
  EXPECT_EQ(array_map_bytes(16, 1, true, 2), 312u + 8 + 16 * 2);
  EXPECT_EQ(array_map_bytes(8, 4096, false, 2), 312u + 4096 * 8);
}

TEST(MapMemory, ATriggerIsItsTableStatsAndVariables) {
  const HistPlan plain = plan_ok("hist:keys=call_site:vals=bytes_req");
  const MapMemory m = map_memory(plain, 2);
  EXPECT_EQ(m.table, hash_map_bytes(8, 16, 2048, true, 2));
  EXPECT_EQ(m.stats, array_map_bytes(16, 1, true, 2));
  EXPECT_EQ(m.vars, 0u);
  // Hot slots: 256 per CPU of {key, hitcount, bytes_req, standing}.
  ASSERT_EQ(plain.hot_slots, 256u);
  EXPECT_EQ(m.hot, array_map_bytes(8 + 16 + 8, 256, true, 2));
  EXPECT_EQ(m.total(), m.table + m.stats + m.hot);

  // Variables: the record follows the values in one shared hash.
  const HistPlan vars = plan_ok("hist:keys=common_pid:ts0=common_timestamp:size=100");
  ASSERT_TRUE(vars.has_var_map());
  ASSERT_TRUE(vars.records_in_table());
  EXPECT_EQ(vars.record_offset(), 8u);
  EXPECT_EQ(vars.table_value_size(), 8u + vars.var_record_size);
  const MapMemory v = map_memory(vars, 2);
  EXPECT_EQ(v.table, hash_map_bytes(vars.key_size, 8 + vars.var_record_size, 128, false, 2));
  EXPECT_EQ(v.vars, 0u);
  // More CPUs cost per-CPU values, and a shared hash's spare element per CPU.
  EXPECT_GT(map_memory(plain, 64).table, m.table);
  EXPECT_EQ(map_memory(vars, 64).table - v.table, 62u * (48 + 8 + 8 + vars.var_record_size + 8 + 32));

  // A named table's triggers keep their records in a map of their own.
  const HistPlan named = plan_ok("hist:name=t:keys=common_pid:ts0=common_timestamp:size=100");
  ASSERT_TRUE(named.separate_var_map());
  EXPECT_EQ(map_memory(named, 2).vars, hash_map_bytes(named.key_size, named.var_record_size, 128, false, 2));
}

// The per-CPU or shared choice: per-CPU until the per-CPU hash would pass the
// policy's limit; a lone .log2 key in slots whatever the CPUs.
TEST(TableMapChoice, PerCpuUntilTheLimitThenShared) {
  const TablePolicy two{2, uint64_t{16} << 20}, many{64, uint64_t{16} << 20};
  const HistPlan small = plan_ok("hist:keys=call_site");
  EXPECT_EQ(choose_table_map(small, two), TableMap::PerCpuHash);
  EXPECT_EQ(choose_table_map(small, many), TableMap::PerCpuHash);  // 1.16 MiB on 64 CPUs
  HistPlan big = plan_ok("hist:keys=call_site:vals=bytes_req:size=131072");
  EXPECT_EQ(choose_table_map(big, two), TableMap::PerCpuHash);   // 12.6 MiB
  EXPECT_EQ(choose_table_map(big, many), TableMap::SharedHash);  // 141 MiB per-CPU, 10.5 MiB shared
  big.table_map = TableMap::SharedHash;
  const MapMemory shared = map_memory(big, 64);
  big.table_map = TableMap::PerCpuHash;
  EXPECT_LT(shared.table * 10, map_memory(big, 64).table);
  EXPECT_EQ(choose_table_map(big, TablePolicy{2, 1 << 20}), TableMap::SharedHash);  // the limit is the user's
  EXPECT_EQ(choose_table_map(plan_ok("hist:keys=bytes_req.log2:size=131072"), many), TableMap::Log2Slots);
  EXPECT_EQ(plan_ok("hist:keys=bytes_req.log2").table_map, TableMap::Log2Slots);
  EXPECT_EQ(plan_ok("hist:keys=bytes_req.log2,call_site").table_map, TableMap::PerCpuHash);
  EXPECT_EQ(plan_ok("hist:name=t:keys=bytes_req.log2").table_map, TableMap::PerCpuHash);
  EXPECT_EQ(plan_ok("hist:keys=bytes_req.log2:x=call_site").table_map, TableMap::SharedWithRecords);
}

// Hot slots go in front of per-CPU hash tables whose events touch nothing
// but their values: at most 256 (never more than the table's size), keys of
// at most 64 bytes.
TEST(HotSlotChoice, PerCpuHashTablesOfTheirOwnWithSmallKeys) {
  EXPECT_EQ(plan_ok("hist:keys=call_site").hot_slots, 256u);
  EXPECT_EQ(plan_ok("hist:keys=call_site:size=128").hot_slots, 128u);
  EXPECT_EQ(plan_ok("hist:keys=call_site,bytes_req:vals=bytes_alloc:size=131072").hot_slots, 256u);
  EXPECT_EQ(plan_ok("hist:keys=comm").hot_slots, 256u);                          // 16 bytes
  EXPECT_EQ(plan_ok("hist:keys=common_stacktrace").hot_slots, 0u);               // 128 bytes
  EXPECT_EQ(plan_ok("hist:keys=bytes_req.log2").hot_slots, 0u);                  // the log2 slots are an array already
  EXPECT_EQ(plan_ok("hist:name=t:keys=call_site").hot_slots, 0u);                // other triggers' programs share it
  EXPECT_EQ(plan_ok("hist:keys=call_site:ts0=common_timestamp").hot_slots, 0u);  // variable records
  HistPlan shared = plan_ok("hist:keys=call_site");
  shared.table_map = TableMap::SharedHash;
  EXPECT_EQ(choose_hot_slots(shared), 0u);
  HistPlan refs = plan_ok("hist:keys=call_site");
  refs.refs.push_back(VarRef{});
  EXPECT_EQ(choose_hot_slots(refs), 0u);
}

// The slot of a key: a multiplicative hash of its u64 words, top bits.
TEST(HotSlotChoice, SlotIndexIsTheTopBitsOfTheWordHash) {
  const uint64_t pid = 4242;
  std::vector<uint8_t> key(8);
  std::memcpy(key.data(), &pid, 8);
  EXPECT_EQ(hot_slot_index(key, 256), static_cast<uint32_t>((pid * kHotHashMultiplier) >> 56));
  EXPECT_EQ(hot_slot_index(key, 128), static_cast<uint32_t>((pid * kHotHashMultiplier) >> 57));
  std::vector<uint8_t> two(16);
  const uint64_t words[2] = {7, 9};
  std::memcpy(two.data(), words, 16);
  EXPECT_EQ(hot_slot_index(two, 256),
            static_cast<uint32_t>((((7 * kHotHashMultiplier) ^ 9) * kHotHashMultiplier) >> 56));
  // Consecutive pids spread over the slots.
  std::set<uint32_t> used;
  for (uint64_t p = 1000; p < 1256; ++p) {
    std::memcpy(key.data(), &p, 8);
    used.insert(hot_slot_index(key, 256));
  }
  EXPECT_GT(used.size(), 150u);
}

TEST(MapMemory, HistDebugLines) {
  const HistPlan p = plan_ok("hist:keys=call_site:ts0=common_timestamp");
  EXPECT_EQ(debug_memory(p, MapMemory{100, 20, 0}, 2, ""),
            "  map memory: 120 bytes (table 100, stats 20, variables 0; 2 possible CPUs)\n");
  EXPECT_EQ(debug_memory(p, MapMemory{100, 20, 0}, 2, "foo"),
            "  map memory: 120 bytes (table 100, stats 20, variables 0; 2 possible CPUs)\n"
            "  table and stats shared with the other triggers of named table foo: counted once\n");
  const HistPlan hot = plan_ok("hist:keys=call_site:vals=bytes_req");
  EXPECT_EQ(debug_memory(hot, MapMemory{100, 20, 0, 7}, 2, ""),
            "  hot slots: percpu_array, max_entries: 256, key_size: 4, value_size: 32\n"
            "  map memory: 127 bytes (table 100, stats 20, variables 0, hot slots 7; 2 possible CPUs)\n");
}

}  // namespace
}  // namespace histd::plan
