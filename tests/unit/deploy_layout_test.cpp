// SPDX-License-Identifier: GPL-2.0-only
// The deployer's kernel objects for real trigger plans, without root (a
// FakeKernel, deploy_support.h): which maps it makes with which shapes,
// which of them each program is loaded with, what is pinned and installed,
// and what a shutdown leaves (the pinned tables, nothing else).
#include <linux/bpf.h>

#include <algorithm>
#include <cstring>

#include "deploy_support.h"
#include "hist_shared.h"
#include "histd/codegen.h"

namespace histd::testing {
namespace {

using Spec = deploy::Kernel::MapSpec;
constexpr size_t kDeployerMaps = 3;  // the control array, the lost counts, the pid list
const Spec kRing{BPF_MAP_TYPE_RINGBUF, "histd_ring", 0, 0, 1u << 22};

// The maps made for triggers: after the deployer's own, but the ring (made
// with the first program).
std::vector<Spec> trigger_maps(const FakeKernel& k) {
  std::vector<Spec> out;
  for (const FakeKernel::Map* m : k.created()) out.push_back(m->spec);
  out.erase(out.begin(), out.begin() + std::min(out.size(), kDeployerMaps));
  std::erase(out, kRing);
  return out;
}

uint64_t created_id(const FakeKernel& k, size_t n) { return k.created().at(n)->id; }

// The id of the `n`th map made for triggers (trigger_maps()'s).
uint64_t trigger_map_id(const FakeKernel& k, size_t n) {
  std::vector<uint64_t> ids;
  for (const FakeKernel::Map* m : k.created())
    if (m->spec != kRing) ids.push_back(m->id);
  return ids.at(kDeployerMaps + n);
}

// The rings made so far, and the id of the first.
size_t rings(const FakeKernel& k) {
  const auto created = k.created();
  return static_cast<size_t>(std::count_if(created.begin(), created.end(), [](auto* m) { return m->spec == kRing; }));
}
uint64_t ring_id(const FakeKernel& k) {
  for (const FakeKernel::Map* m : k.created())
    if (m->spec == kRing) return m->id;
  return 0;
}

// A trigger whose program sends histd something: its stack.
constexpr const char* kSends = "stacktrace";

uint32_t next_slot(const FakeKernel::LoadCall& load) {
  auto it = load.rodata.find(codegen::kChainNextSlot);
  uint32_t slot = 0;
  if (it != load.rodata.end() && it->second.size() == sizeof(slot)) std::memcpy(&slot, it->second.data(), 4);
  return it == load.rodata.end() ? 0 : slot;
}

TEST(DeployLayout, TheDeployersOwnMapsComeFirst) {
  FakeDeploy d;
  const auto created = d.kernel().created();
  ASSERT_EQ(created.size(), kDeployerMaps);
  EXPECT_EQ(created[0]->spec,
            (Spec{BPF_MAP_TYPE_ARRAY, "histd_ctl", 4, sizeof(histd_trigger_control), HISTD_CONTROL_SLOTS}));
  EXPECT_EQ(created[1]->spec, (Spec{BPF_MAP_TYPE_PERCPU_ARRAY, "histd_lost", 4, 8, HISTD_LOST_SLOTS}));
  // set_event_pid's list, allocated as pids are listed.
  EXPECT_EQ(created[2]->spec, (Spec{BPF_MAP_TYPE_HASH, "histd_pids", 4, 1, HISTD_MAX_EVENT_PIDS, BPF_F_NO_PREALLOC}));
  // No ring yet: a tree that never has a program never has one.
  EXPECT_FALSE(d.deployer().ring().has_ring());
  // options/stacktrace starts off, and no pid list is in force: their
  // slots read paused.
  for (const uint32_t slot : {HISTD_STACKTRACE_OPTION_SLOT, HISTD_PID_FILTER_SLOT}) {
    const std::span<const uint8_t> key = deploy::bytes_of(slot);
    const auto& elements = created[0]->elements;
    auto it = elements.find(std::vector<uint8_t>(key.begin(), key.end()));
    ASSERT_NE(it, elements.end()) << slot;
    histd_trigger_control word{};
    std::memcpy(&word, it->second.data(), sizeof(word));
    EXPECT_EQ(word.paused, 1u) << slot;
  }
}

// A program that sends histd nothing (hist triggers without actions)
// makes no ring, and the ring its object declares is not created (map 0
// in the fake); the first that sends (a stack, here) makes it.
TEST(DeployLayout, TheRingComesWithTheFirstProgramThatSendsAndStays) {
  FakeDeploy d;
  FakeKernel& k = d.kernel();
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=common_pid"));
  EXPECT_EQ(rings(k), 0u) << k.journal();
  EXPECT_FALSE(d.deployer().ring().has_ring());
  EXPECT_EQ(k.loads().back().maps.at(codegen::kRingMap), 0u);
  ASSERT_TRUE(d.run(kWaking, kSends));
  ASSERT_EQ(rings(k), 1u) << k.journal();
  EXPECT_TRUE(d.deployer().ring().has_ring());
  EXPECT_EQ(k.loads().back().maps.at(codegen::kRingMap), ring_id(k));
  // Every later program that sends uses the same ring, and it outlives
  // the triggers that made it.
  ASSERT_TRUE(d.run(kKmalloc, "!hist:keys=common_pid"));
  ASSERT_TRUE(d.run(kWaking, std::string("!") + kSends));
  ASSERT_TRUE(d.run(kSwitch, kSends));
  EXPECT_EQ(rings(k), 1u) << k.journal();
  EXPECT_EQ(k.loads().back().maps.at(codegen::kRingMap), ring_id(k));
}

TEST(DeployLayout, PidKeyWithBytesValue) {
  FakeDeploy d;
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=common_pid:vals=bytes_req"));
  FakeKernel& k = d.kernel();
  // A u64 key slot, hitcount and bytes_req per CPU, the kernel's 2048
  // entries; its hit counts; hot slots in front (8 + 16 + 8 bytes each).
  EXPECT_EQ(trigger_maps(k), (std::vector<Spec>{
                                 {BPF_MAP_TYPE_PERCPU_HASH, "histd_table", 8, 16, 2048},
                                 {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_stats", 4, sizeof(histd_table_stats), 1},
                                 {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_hot", 4, 32, 256},
                             }));
  // One program, loaded with them and the deployer's maps, chained: the
  // dispatcher's array, its next slot after the group's (slot 1).
  ASSERT_EQ(k.loads().size(), 1u);
  const FakeKernel::LoadCall& load = k.loads()[0];
  ASSERT_EQ(k.dispatchers().size(), 1u);
  const FakeKernel::Dispatcher& disp = *k.dispatchers()[0];
  EXPECT_EQ(load.maps, (std::map<std::string, uint64_t>{{codegen::kControlMap, created_id(k, 0)},
                                                        {codegen::kRingMap, ring_id(k)},
                                                        {codegen::kLostMap, created_id(k, 1)},
                                                        {codegen::kPidsMap, created_id(k, 2)},
                                                        {codegen::table_map_name(0), trigger_map_id(k, 0)},
                                                        {codegen::stats_map_name(0), trigger_map_id(k, 1)},
                                                        {codegen::hot_map_name(0), trigger_map_id(k, 2)},
                                                        {codegen::kChainMap, disp.slots_map}}));
  EXPECT_EQ(next_slot(load), 2u);
  // Attached at its tracepoint; the group's program in slot 1 and, with
  // no event program, at the head too.
  EXPECT_EQ(disp.at.system, "kmem");
  EXPECT_EQ(disp.at.event, "kmalloc");
  EXPECT_EQ(disp.slots[0], load.program);
  EXPECT_EQ(disp.slots[1], load.program);
  EXPECT_TRUE(std::all_of(disp.slots.begin() + 2, disp.slots.end(), [](uint64_t p) { return p == 0; }));
  // Its table's three maps and the dispatcher's link and array, pinned.
  EXPECT_EQ(k.live().pins.size(), 5u) << k.journal();
}

TEST(DeployLayout, Log2KeyIsAnArrayOfBuckets) {
  FakeDeploy d;
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=bytes_req.log2"));
  // A bucket index, not the key: one slot per power of two, no hot slots.
  EXPECT_EQ(trigger_maps(d.kernel()), (std::vector<Spec>{
                                          {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_table", 4, 8, plan::HistPlan::kLog2Slots},
                                          {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_stats", 4, sizeof(histd_table_stats), 1},
                                      }));
}

TEST(DeployLayout, VariablesLiveInTheTableAndAReferenceReadsThem) {
  FakeDeploy d;
  ASSERT_TRUE(d.run(kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"));
  FakeKernel& k = d.kernel();
  // One hash for all CPUs: the hitcount, then the variable record (its
  // set mask and ts0).
  EXPECT_EQ(trigger_maps(k), (std::vector<Spec>{
                                 {BPF_MAP_TYPE_HASH, "histd_table", 8, 24, 2048},
                                 {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_stats", 4, sizeof(histd_table_stats), 1},
                             }));
  const uint64_t waking_table = trigger_map_id(k, 0);
  // Not plain: the event program holds it, in slot 0 alone.
  ASSERT_EQ(k.dispatchers().size(), 1u);
  EXPECT_EQ(k.dispatchers()[0]->slots[0], k.loads().back().program);
  EXPECT_EQ(k.dispatchers()[0]->slots[1], 0u);
  EXPECT_EQ(next_slot(k.loads().back()), 1u);

  ASSERT_TRUE(d.run(kSwitch, "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0"));
  // sched_switch's program reads $ts0 from sched_waking's table.
  const FakeKernel::LoadCall& load = k.loads().back();
  ASSERT_TRUE(load.maps.count(codegen::ref_map_name(0, 0))) << k.journal();
  EXPECT_EQ(load.maps.at(codegen::ref_map_name(0, 0)), waking_table);
  EXPECT_EQ(load.maps.at(codegen::table_map_name(0)), trigger_map_id(k, 2));
}

TEST(DeployLayout, ANamedTableKeepsItsVariablesApart) {
  FakeDeploy d;
  ASSERT_TRUE(d.run(kWaking, "hist:name=wake:keys=pid:ts0=common_timestamp.usecs"));
  // Others share the table: the record goes to a map of its own (its set
  // mask and ts0), made first; the table stays per CPU.
  EXPECT_EQ(trigger_maps(d.kernel()), (std::vector<Spec>{
                                          {BPF_MAP_TYPE_HASH, "histd_vars", 8, 16, 2048},
                                          {BPF_MAP_TYPE_PERCPU_HASH, "histd_table", 8, 8, 2048},
                                          {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_stats", 4, sizeof(histd_table_stats), 1},
                                      }));
  EXPECT_EQ(d.kernel().loads().back().maps.at(codegen::var_map_name(0)), trigger_map_id(d.kernel(), 0));
}

TEST(DeployLayout, ShutdownLeavesThePinnedTablesAlone) {
  FakeDeploy d;
  ASSERT_TRUE(d.run(kKmalloc, "hist:keys=common_pid:vals=bytes_req"));
  ASSERT_TRUE(d.run(kWaking, "hist:keys=pid:ts0=common_timestamp.usecs"));
  FakeKernel& k = d.kernel();
  d.deployer().shutdown();
  // The tables' pins keep their counts for the next start; the
  // dispatchers are detached (their pins gone), the programs closed.
  const FakeKernel::Live after = k.live();
  EXPECT_EQ(after.pins.size(), 5u) << k.journal();
  EXPECT_TRUE(std::none_of(after.pins.begin(), after.pins.end(), [](const std::string& p) {
    return p.ends_with("_link") || p.ends_with("_slots");
  })) << k.journal();
  EXPECT_TRUE(after.dispatchers.empty()) << k.journal();
  EXPECT_TRUE(after.programs.empty()) << k.journal();
  // Live maps: the deployer's own (it still holds them; no ring: nothing
  // sent) and the pinned five.
  EXPECT_EQ(after.maps.size(), kDeployerMaps + 5) << k.journal();
}

}  // namespace
}  // namespace histd::testing
