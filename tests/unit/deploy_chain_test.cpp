// SPDX-License-Identifier: GPL-2.0-only
// Which program of an event's chain each trigger goes to (docs/design/bpf.md,
// "Program chains"), without root (a FakeKernel, deploy_support.h). The
// triggers that are not plain run in the order they came, as the kernel
// runs an event's hist triggers, so none goes ahead of one that came before
// it; plain ones fill any room; a new trigger loads only the program it
// joins.
#include "deploy_support.h"
#include "histd/codegen.h"

namespace histd::testing {
namespace {

std::string with_var(int i) {
  return "hist:keys=pid:v" + std::to_string(i) + "=common_timestamp if pid != " + std::to_string(4000000 + i);
}
std::string plain(int i) { return "hist:keys=pid if pid != " + std::to_string(4100000 + i); }

size_t tables(const FakeKernel::LoadCall& load) {
  size_t n = 0;
  while (load.maps.count(codegen::table_map_name(n))) ++n;
  return n;
}

// What each of the first `n` slots of the event's chain holds: the number
// of triggers of its program, -1 when empty.
std::vector<int> slots(const FakeKernel& k, size_t n) {
  std::vector<int> out;
  const FakeKernel::Dispatcher& d = *k.dispatchers().at(0);
  for (size_t s = 0; s < n; ++s) {
    int held = -1;
    for (const FakeKernel::LoadCall& load : k.loads())
      if (d.slots[s] && load.program == d.slots[s]) held = int(tables(load));
    out.push_back(held);
  }
  return out;
}

uint64_t head(const FakeKernel& k) { return k.dispatchers().at(0)->slots[0]; }

TEST(DeployChain, TriggersThatAreNotPlainFillTheEventProgramThenFollowInOrder) {
  FakeDeploy d;
  FakeKernel& k = d.kernel();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(d.run(kWaking, with_var(i)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{4, -1, -1}));
  const uint64_t event_program = head(k);
  // The fifth: a program of its own after the event program, which stays.
  size_t loads = k.loads().size();
  ASSERT_TRUE(d.run(kWaking, with_var(4)));
  EXPECT_EQ(k.loads().size(), loads + 1);
  EXPECT_EQ(head(k), event_program);
  EXPECT_EQ(slots(k, 3), (std::vector<int>{4, 1, -1}));
  // A plain one takes the room there.
  ASSERT_TRUE(d.run(kWaking, plain(0)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{4, 2, -1}));
  EXPECT_EQ(head(k), event_program);
  // The event program loses one: a new trigger with a variable still goes
  // after the fifth, not ahead of it into the room left.
  ASSERT_TRUE(d.run(kWaking, "!" + with_var(1)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{3, 2, -1}));
  const uint64_t smaller = head(k);
  ASSERT_TRUE(d.run(kWaking, with_var(5)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{3, 3, -1}));
  EXPECT_EQ(head(k), smaller);
  ASSERT_TRUE(d.run(kWaking, with_var(6)));
  ASSERT_TRUE(d.run(kWaking, with_var(7)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{3, 4, 1}));
  // A plain one fills the first room, wherever it is.
  ASSERT_TRUE(d.run(kWaking, "!" + plain(0)));
  ASSERT_TRUE(d.run(kWaking, plain(1)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{3, 4, 1}));
  ASSERT_TRUE(d.run(kWaking, plain(2)));
  EXPECT_EQ(slots(k, 3), (std::vector<int>{3, 4, 2}));
}

// With no chain (0 to a program) every trigger is the event program's.
TEST(DeployChain, NoneToAProgramKeepsEveryTriggerInTheEventProgram) {
  deploy::Options o = fake_deploy_options();
  o.triggers_per_program = 0;
  FakeDeploy d(o);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(d.run(kWaking, with_var(i)));
  ASSERT_TRUE(d.run(kWaking, plain(0)));
  EXPECT_EQ(slots(d.kernel(), 2), (std::vector<int>{6, -1}));
}

}  // namespace
}  // namespace histd::testing
