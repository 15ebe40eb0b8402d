// Real tracepoints driven by the test's own syscalls, filtered on its own pid.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

std::string fmt_row(int fd, int hits, int sum) {
  char line[128];
  snprintf(line, sizeof line, "{ fd: %10d } hitcount: %10d  count: %10d\n", fd, hits, sum);
  return line;
}

TEST(Tracepoint, OwnWritesAreCountedExactly) {
  HISTD_REQUIRE_BPF();
  auto engine = real_engine();
  ASSERT_TRUE(engine);
  const std::string cmd = "hist:keys=fd:vals=count if common_pid == " + std::to_string(getpid());
  auto r = engine->write_trigger("syscalls", "sys_enter_write", cmd);
  ASSERT_TRUE(r.ok()) << r.error().message();

  int a = open("/dev/null", O_WRONLY);
  int b = open("/dev/null", O_WRONLY);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  char buf[16] = {};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(write(a, buf, 5), 5);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(write(b, buf, 7), 7);

  auto h = engine->read_hist("syscalls", "sys_enter_write");
  ASSERT_TRUE(h.ok()) << h.error().context;
  EXPECT_EQ(*h, "# event histogram\n"
                "#\n"
                "# trigger info: hist:keys=fd:vals=hitcount,count:sort=hitcount:size=2048 if common_pid == " +
                    std::to_string(getpid()) +
                    " [active]\n"
                    "#\n"
                    "\n" +
                    fmt_row(b, 2, 14) + fmt_row(a, 3, 15) +
                    "\n"
                    "Totals:\n"
                    "    Hits: 5\n"
                    "    Entries: 2\n"
                    "    Dropped: 0\n");
  close(a);
  close(b);
  engine->shutdown();
}

}  // namespace
}  // namespace histd::testing
