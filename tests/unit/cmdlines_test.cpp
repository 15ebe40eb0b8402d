// SPDX-License-Identifier: GPL-2.0-only
// saved_cmdlines as the kernel keeps it: a fixed number of slots filled in
// turn, a task seen again keeping its slot.
#include <gtest/gtest.h>

#include "histd/trace_buffer.h"

namespace histd::testing {
namespace {

using trace::Cmdlines;

TEST(Cmdlines, TasksAreListedByTheirSlotsTheFirstInSlotOne) {
  Cmdlines c(4);
  c.save(100, "bash");
  c.save(200, "sleep");
  c.save(300, "cat");
  // Slots 1, 2, 3 in turn; slot 0 is the fourth task's.
  EXPECT_EQ(c.text(), "100 bash\n200 sleep\n300 cat\n");
  c.save(400, "dd");
  EXPECT_EQ(c.text(), "400 dd\n100 bash\n200 sleep\n300 cat\n");
  EXPECT_EQ(c.comm(200), "sleep");
  EXPECT_EQ(c.comm(999), "");
}

TEST(Cmdlines, ATaskSeenAgainKeepsItsSlotWithItsNewComm) {
  Cmdlines c(3);
  c.save(100, "bash");
  c.save(200, "sleep");
  c.save(100, "true");  // exec'd since
  EXPECT_EQ(c.text(), "100 true\n200 sleep\n");
  EXPECT_EQ(c.comm(100), "true");
}

TEST(Cmdlines, ANewTaskTakesTheOldestSlotAndTheOldPidIsForgotten) {
  Cmdlines c(2);
  c.save(100, "a");
  c.save(200, "b");
  c.save(300, "c");  // slot 1 again: 100's
  EXPECT_EQ(c.comm(100), "");
  EXPECT_EQ(c.comm(300), "c");
  EXPECT_EQ(c.text(), "200 b\n300 c\n");
  c.save(100, "a");  // back, into 200's slot
  EXPECT_EQ(c.text(), "100 a\n300 c\n");
}

TEST(Cmdlines, TheIdleTaskIsNotSaved) {
  Cmdlines c;
  c.save(0, "swapper/0");
  EXPECT_EQ(c.text(), "");
  EXPECT_EQ(c.size(), Cmdlines::kDefaultSize);
}

TEST(Cmdlines, ResizingStartsEmptyAndRefusesWhatTheKernelRefuses) {
  Cmdlines c(8);
  c.save(100, "bash");
  EXPECT_FALSE(c.resize(0));
  EXPECT_FALSE(c.resize(Cmdlines::kMaxSize + 1));
  EXPECT_EQ(c.size(), 8u);
  EXPECT_EQ(c.comm(100), "bash");
  EXPECT_TRUE(c.resize(1));
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.text(), "");
  c.save(100, "a");
  c.save(200, "b");
  EXPECT_EQ(c.text(), "200 b\n");
}

}  // namespace
}  // namespace histd::testing
