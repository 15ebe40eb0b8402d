// SPDX-License-Identifier: GPL-2.0-only
// set_event_pid's writes read as the kernel's trace_pid_write() reads them
// (daemon/fs/control_value.h): words, each a number kstrtoul(word, 0)
// takes, cut to a pid_t; a bad word refuses the whole write.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "fs/control_value.h"

namespace histd::fs {
namespace {

using Pids = std::vector<uint32_t>;

Pids pids_of(std::string_view text) {
  auto r = parse_pid_list(text);
  EXPECT_TRUE(r.ok()) << text;
  return r ? *r : Pids{};
}

int refusal_of(std::string_view text) {
  auto r = parse_pid_list(text);
  EXPECT_FALSE(r.ok()) << text;
  return r ? 0 : r.error();
}

TEST(PidList, WordsBetweenBlanksInTheOrderWritten) {
  EXPECT_EQ(pids_of("12 7 3"), (Pids{12, 7, 3}));
  EXPECT_EQ(pids_of("1\n2\t3\r4\v5\f6"), (Pids{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(pids_of("  42  \n"), (Pids{42}));
  // A NUL ends a word as a blank does.
  EXPECT_EQ(pids_of(std::string_view("1\0"
                                     "2",
                                     3)),
            (Pids{1, 2}));
  // The same pid twice is listed once, by the list.
  EXPECT_EQ(pids_of("5 5"), (Pids{5, 5}));
}

TEST(PidList, NothingButBlanksIsNoPid) {
  EXPECT_EQ(pids_of(""), Pids{});
  EXPECT_EQ(pids_of("\n"), Pids{});
  EXPECT_EQ(pids_of(" \t \n"), Pids{});
}

TEST(PidList, NumbersAsKstrtoulTakesThemWithoutABase) {
  EXPECT_EQ(pids_of("0x10 0X1f 010 0 +5"), (Pids{16, 31, 8, 0, 5}));
  // Cut to a pid_t, as the kernel's (pid_t)val: 2^32 is pid 0.
  EXPECT_EQ(pids_of("4294967296"), (Pids{0}));
  EXPECT_EQ(pids_of("1073741823"), (Pids{1073741823}));
}

TEST(PidList, AWordThatIsNoNumberRefusesTheWholeWrite) {
  for (const char* bad : {"abc", "1 2 x", "-1", "+", "++5", "0x", "08", "0x1g", "1.5", "12a", "18446744073709551616"})
    EXPECT_EQ(refusal_of(bad), EINVAL) << bad;
  // A word longer than the kernel's parser takes.
  EXPECT_EQ(refusal_of(std::string(128, '1')), EINVAL);
  EXPECT_EQ(pids_of(std::string(126, '0') + "7"), (Pids{7}));
}

TEST(PidList, APidTheKernelsListCannotHoldIsEperm) {
  // pid_list.h holds pids below 2^30; -1 cut to a pid_t is past it too.
  EXPECT_EQ(refusal_of("1073741824"), EPERM);
  EXPECT_EQ(refusal_of("4294967295"), EPERM);
  EXPECT_EQ(refusal_of("1 1073741824"), EPERM);
}

}  // namespace
}  // namespace histd::fs
