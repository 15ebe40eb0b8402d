// SPDX-License-Identifier: GPL-2.0-only
// Hot slots (plan::HistPlan::hot_slots): the per-CPU slots in front of a
// per-CPU hash table. Whatever the slots hold, the hist file must be the one
// a table without them would show: these tests drive keys into the same
// slot, onto both CPUs, through clears and rebuilds, and check the tables
// exactly, and the slots themselves where that proves the path was taken.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bpf_test_support.h"
#include "histd/plan.h"
#include "histd/plan_memory.h"

namespace histd::testing {
namespace {

// syscalls:sys_enter_write: __syscall_nr int @8, fd u64 @16, buf @24, count @32.
Record write_record(int32_t pid, uint64_t fd, uint64_t count) {
  Record r(40);
  r.pid(pid).set<int32_t>(8, 1).set<uint64_t>(16, fd).set<uint64_t>(32, count);
  return r;
}

uint32_t slot_of(uint64_t key, uint32_t slots = 256) {
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &key, 8);
  return plan::hot_slot_index(bytes, slots);
}

// Another u64 key whose slot is `key`'s.
uint64_t same_slot_as(uint64_t key) {
  for (uint64_t other = key + 1;; ++other)
    if (slot_of(other) == slot_of(key)) return other;
}

// A row of `keys=fd:vals=count`, as the kernel prints it.
std::string row(uint64_t fd, uint64_t hits, uint64_t count) {
  char line[128];
  std::snprintf(line, sizeof(line), "{ fd: %10llu } hitcount: %10llu  count: %10llu\n",
                static_cast<unsigned long long>(fd), static_cast<unsigned long long>(hits),
                static_cast<unsigned long long>(count));
  return line;
}

// Runs the rest of the test on one CPU: injected records run their program
// on the CPU of the thread that injects them.
class OnCpu {
 public:
  explicit OnCpu(int cpu) {
    sched_getaffinity(0, sizeof(old_), &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~OnCpu() { sched_setaffinity(0, sizeof(old_), &old_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t old_{};
  bool ok_ = false;
};

// One CPU's copy of a slot of `keys=fd:vals=count`: {fd, hitcount, count, standing}.
struct Slot {
  uint64_t key = 0, hits = 0, sum = 0, standing = 0;
};

class HotSlotsTest : public EngineTest {
 public:
  void add(const std::string& cmd) { EngineTest::add("syscalls", "sys_enter_write", cmd); }
  void inject(const Record& rec, int times = 1) {
    for (int i = 0; i < times; ++i) EngineTest::inject("syscalls", "sys_enter_write", rec);
  }
  std::string hist() {
    auto h = read_hist(*engine_, "syscalls", "sys_enter_write");
    EXPECT_TRUE(h.ok());
    return h.ok() ? *h : "";
  }
  // Every CPU's copy of slot `index` of the first trigger's hot slots.
  std::vector<Slot> slot(uint32_t index) {
    const auto info = engine_->reads().trigger_info();
    EXPECT_FALSE(info.empty());
    if (info.empty() || info[0].hot_map_id == 0) return {};
    const int fd = bpf_map_get_fd_by_id(info[0].hot_map_id);
    EXPECT_GE(fd, 0);
    std::vector<Slot> per_cpu(static_cast<size_t>(libbpf_num_possible_cpus()));
    EXPECT_EQ(bpf_map_lookup_elem(fd, &index, per_cpu.data()), 0);
    close(fd);
    return per_cpu;
  }
};

// Two keys meeting in one slot: the first takes it, the second wins it once
// the first's standing has run out (the first's values move to the hash),
// and every event is counted once, wherever it went.
TEST_F(HotSlotsTest, KeysMeetingInOneSlotTakeItInTurnAndCountExactly) {
  OnCpu cpu0(0);
  ASSERT_TRUE(cpu0.ok());
  add("hist:keys=fd:vals=count");
  const uint64_t a = 3, b = same_slot_as(a), c = a + 1;
  ASSERT_NE(slot_of(c), slot_of(a));
  inject(write_record(1, a, 10), 5);  // the hash, then 4 in the slot: standing 2 + 4
  EXPECT_EQ(slot(slot_of(a))[0].key, a);
  EXPECT_EQ(slot(slot_of(a))[0].hits, 4u);
  inject(write_record(1, b, 100), 10);  // 6 take a's standing, b takes the slot, 4 more there
  inject(write_record(1, a, 1), 3);     // in the hash: b stands
  inject(write_record(1, c, 7), 4);
  const Slot s = slot(slot_of(a))[0];
  EXPECT_EQ(s.key, b);
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.sum, 400u);
  EXPECT_EQ(s.standing, plan::kHotStart + 4 - 3);
  EXPECT_EQ(hist(),
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=fd:vals=hitcount,count:sort=hitcount:size=2048 [active]\n"
            "#\n"
            "\n" +
                row(c, 4, 28) + row(a, 8, 53) + row(b, 10, 1000) +
                "\n"
                "Totals:\n"
                "    Hits: 22\n"
                "    Entries: 3\n"
                "    Dropped: 0\n");
  const std::string debug = read_hist_debug(*engine_, "syscalls", "sys_enter_write");
  EXPECT_NE(debug.find("  hot slots: percpu_array, max_entries: 256, key_size: 4, value_size: 32\n"), std::string::npos)
      << debug;
}

// Each CPU has its own slots; reading adds every CPU's to the key's entry.
TEST_F(HotSlotsTest, EveryCpuHoldsItsOwnSlotsAndReadingAddsThemUp) {
  if (libbpf_num_possible_cpus() < 2 || sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "SKIP: one CPU";
  add("hist:keys=fd:vals=count");
  {
    OnCpu cpu(0);
    ASSERT_TRUE(cpu.ok());
    inject(write_record(1, 9, 2), 3);
  }
  {
    OnCpu cpu(1);
    ASSERT_TRUE(cpu.ok());
    inject(write_record(1, 9, 5), 4);
  }
  const std::vector<Slot> s = slot(slot_of(9));
  EXPECT_EQ(s[0].key, 9u);
  EXPECT_EQ(s[0].hits, 2u);
  EXPECT_EQ(s[1].key, 9u);
  EXPECT_EQ(s[1].hits, 3u);
  EXPECT_NE(hist().find("{ fd:          9 } hitcount:          7  count:         26\n\nTotals:\n    Hits: 7\n"
                        "    Entries: 1\n"),
            std::string::npos)
      << hist();
}

// clear empties the slots with the hash; counting starts again from zero.
TEST_F(HotSlotsTest, ClearEmptiesTheSlotsToo) {
  OnCpu cpu0(0);
  ASSERT_TRUE(cpu0.ok());
  add("hist:keys=fd:vals=count");
  inject(write_record(1, 5, 1), 6);
  ASSERT_EQ(slot(slot_of(5))[0].hits, 5u);
  add("hist:keys=fd:vals=count:clear");
  EXPECT_EQ(slot(slot_of(5))[0].standing, 0u);
  EXPECT_NE(hist().find("\n\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 0\n"), std::string::npos) << hist();
  inject(write_record(1, 5, 1), 2);
  EXPECT_NE(hist().find("{ fd:          5 } hitcount:          2  count:          2\n\nTotals:\n    Hits: 2\n"),
            std::string::npos)
      << hist();
}

// Recompiling the event (another trigger arrives, then goes) keeps the
// slots: they are the engine's maps, like the table.
TEST_F(HotSlotsTest, SlotsKeepTheirCountsThroughRebuilds) {
  OnCpu cpu0(0);
  ASSERT_TRUE(cpu0.ok());
  add("hist:keys=fd:vals=count");
  inject(write_record(1, 5, 1), 4);
  add("hist:keys=common_pid");
  inject(write_record(1, 5, 1), 4);
  ASSERT_TRUE(engine_->write_trigger("syscalls", "sys_enter_write", "!hist:keys=common_pid").ok());
  inject(write_record(1, 5, 1), 4);
  EXPECT_EQ(slot(slot_of(5))[0].hits, 11u);
  EXPECT_NE(hist().find("{ fd:          5 } hitcount:         12  count:         12\n\nTotals:\n    Hits: 12\n"),
            std::string::npos)
      << hist();
}

// A full table: a key the hash has no room for never reaches a slot, so
// Entries stays at the size and every such event is Dropped.
TEST_F(HotSlotsTest, AKeyTheFullHashRefusesNeverTakesASlot) {
  OnCpu cpu0(0);
  ASSERT_TRUE(cpu0.ok());
  add("hist:keys=fd:size=128");
  for (uint64_t fd = 0; fd < 128; ++fd) inject(write_record(1, fd, 1));
  // A key whose slot is still free: it would take it, if the hash took it.
  uint64_t refused = 1000;
  while (slot(slot_of(refused, 128))[0].standing != 0) ++refused;
  inject(write_record(1, refused, 1), 3);
  EXPECT_EQ(slot(slot_of(refused, 128))[0].standing, 0u);
  EXPECT_NE(hist().find("Totals:\n    Hits: 128\n    Entries: 128\n    Dropped: 3\n"), std::string::npos) << hist();
}

// Keys of strings alone (an aligned key struct) and .execname, whose comm
// the hash entry keeps from its creation.
TEST_F(HotSlotsTest, StringKeysAndExecnameCountThroughTheSlots) {
  OnCpu cpu0(0);
  ASSERT_TRUE(cpu0.ok());
  add("hist:keys=comm");
  add("hist:keys=common_pid.execname");
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(engine_->inject("syscalls", "sys_enter_write", write_record(42, 1, 1).bytes()).ok());
  const std::string h = hist();
  EXPECT_NE(h.find("} hitcount:          5\n\nTotals:\n    Hits: 5\n    Entries: 1\n"), std::string::npos) << h;
  EXPECT_NE(h.find("[        42] } hitcount:          5\n"), std::string::npos) << h;
}

// Many two-word keys, neighbours in both words, each repeated a few times
// across a few hundred slots: every entry keeps exactly its own count.
TEST_F(HotSlotsTest, ManyNeighbouringKeysNeverMix) {
  add("hist:keys=fd,count:size=4096");
  uint64_t hits = 0;
  for (int round = 0; round < 3; ++round)
    for (uint64_t fd = 0; fd < 600; ++fd)
      if (round <= static_cast<int>(fd % 3)) {
        inject(write_record(1, fd, 11000 + fd % 7));
        ++hits;
      }
  const std::string h = hist();
  for (uint64_t fd = 0; fd < 600; ++fd) {
    char line[128];
    std::snprintf(line, sizeof(line), "{ fd: %10llu, count: %10llu } hitcount: %10llu\n",
                  static_cast<unsigned long long>(fd), static_cast<unsigned long long>(11000 + fd % 7),
                  static_cast<unsigned long long>(fd % 3 + 1));
    EXPECT_NE(h.find(line), std::string::npos) << line;
  }
  EXPECT_NE(h.find("Totals:\n    Hits: " + std::to_string(hits) + "\n    Entries: 600\n    Dropped: 0\n"),
            std::string::npos)
      << h.substr(h.size() > 200 ? h.size() - 200 : 0);
}

}  // namespace
}  // namespace histd::testing
