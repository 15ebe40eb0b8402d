// SPDX-License-Identifier: GPL-2.0-only
// catalog::syscall_event: which syscalls: events the raw sys_enter/sys_exit
// tracepoints can stand in for (docs/design/bpf.md, "Syscall events").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "histd/catalog.h"

namespace histd::catalog {
namespace {

// A syscall event's format as the kernel writes it: the common header, the
// number, then the given fields.
EventFormat syscall_format(const std::string& name, const std::vector<std::string>& fields) {
  std::string text = "name: " + name +
                     "\nID: 700\nformat:\n"
                     "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                     "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
                     "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
                     "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
                     "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n";
  for (const std::string& f : fields) text += "\tfield:" + f + "\n";
  text += "\nprint fmt: \"x\"\n";
  auto parsed = parse_format(text, "syscalls");
  EXPECT_TRUE(parsed.ok()) << name;
  return parsed.ok() ? *parsed : EventFormat{};
}

TEST(SyscallEvent, EnterAndExitOfANativeCallTakeItsNumberAndArguments) {
#if defined(__x86_64__)
  const auto write =
      syscall_event(syscall_format("sys_enter_write", {"unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;",
                                                       "const char * buf;\toffset:24;\tsize:8;\tsigned:0;",
                                                       "size_t count;\toffset:32;\tsize:8;\tsigned:0;"}));
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(*write, (SyscallEvent{false, 1, 3}));
  const auto exit = syscall_event(syscall_format("sys_exit_write", {"long ret;\toffset:16;\tsize:8;\tsigned:1;"}));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(*exit, (SyscallEvent{true, 1, 0}));
  const auto getppid = syscall_event(syscall_format("sys_enter_getppid", {}));
  ASSERT_TRUE(getppid.has_value());
  EXPECT_EQ(*getppid, (SyscallEvent{false, 110, 0}));
#else
  GTEST_SKIP() << "raw syscall attachment is x86_64 only";
#endif
}

TEST(SyscallEvent, OnlyWhenTheRecordAndTheNumberAreExact) {
  const std::string ret = "long ret;\toffset:16;\tsize:8;\tsigned:1;";
  // Tracepoints named after the function, not the call: sys_newstat is
  // stat(2), and x86_64 has no umount(2) (sys_umount is umount2): libseccomp
  // gives the first no number and the second one of another ABI.
  EXPECT_FALSE(syscall_event(syscall_format("sys_exit_newstat", {ret})));
  EXPECT_FALSE(syscall_event(syscall_format("sys_exit_umount", {ret})));
  EXPECT_FALSE(syscall_event(syscall_format("sys_exit_no_such_call", {ret})));
  // Another system, another layout, or a field that is not an argument register.
  EventFormat other = syscall_format("sys_exit_write", {ret});
  other.system = "raw_syscalls";
  EXPECT_FALSE(syscall_event(other));
  EXPECT_FALSE(syscall_event(syscall_format("sys_exit_write", {"int ret;\toffset:16;\tsize:4;\tsigned:1;"})));
  EXPECT_FALSE(syscall_event(syscall_format("sys_enter_write", {"unsigned int fd;\toffset:16;\tsize:4;\tsigned:0;"})));
  EXPECT_FALSE(syscall_event(syscall_format("sys_enter_write", {"unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;",
                                                                "size_t count;\toffset:32;\tsize:8;\tsigned:0;"})));
  EXPECT_FALSE(
      syscall_event(syscall_format("sys_enter_write", {"__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;"})));
  EXPECT_FALSE(syscall_event(syscall_format("sys_enter_write", {"char name[8];\toffset:16;\tsize:8;\tsigned:0;"})));
  std::vector<std::string> seven;
  for (int i = 0; i < 7; ++i)
    seven.push_back("unsigned long a" + std::to_string(i) + ";\toffset:" + std::to_string(16 + 8 * i) +
                    ";\tsize:8;\tsigned:0;");
  EXPECT_FALSE(syscall_event(syscall_format("sys_enter_write", seven)));
}

}  // namespace
}  // namespace histd::catalog
