// SPDX-License-Identifier: GPL-2.0-only
// Real tracepoints driven by the test's own syscalls, made on a thread of its
// own name and filtered on it (NamedThread: never on the test's pid).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <regex>

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
  NamedThread self("tpwrite");
  const std::string cmd = "hist:keys=fd:vals=count" + self.filter();
  auto r = engine->write_trigger("syscalls", "sys_enter_write", cmd);
  ASSERT_TRUE(r.ok()) << r.error().message();

  int a = open("/dev/null", O_WRONLY);
  int b = open("/dev/null", O_WRONLY);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  self.run([&] {
    char buf[16] = {};
    for (int i = 0; i < 3; ++i) ASSERT_EQ(write(a, buf, 5), 5);
    for (int i = 0; i < 2; ++i) ASSERT_EQ(write(b, buf, 7), 7);
  });

  auto h = read_hist(*engine, "syscalls", "sys_enter_write");
  ASSERT_TRUE(h.ok()) << h.error().context;
  EXPECT_EQ(*h,
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=fd:vals=hitcount,count:sort=hitcount:size=2048 if common_comm == \"" +
                self.comm() +
                "\" [active]\n"
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

// The names in `dir` that end with `tail`, without it.
std::vector<std::string> pins_ending(const std::filesystem::path& dir, const std::string& tail) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0)
      out.push_back(name.substr(0, name.size() - tail.size()));
  }
  return out;
}

// A new trigger's table that cannot be made (its pin fails) fails the write
// and leaves the event as it was, attached or not, its other trigger
// counting.
TEST(Tracepoint, ATableThatCannotBeMadeLeavesTheEventAsItWas) {
  HISTD_REQUIRE_BPF();
  NamedThread self("tpfails");
  engine::EngineOptions options;
  options.deploy.pin_dir = test_pin_dir("table-fails");
  auto engine = real_engine(options);
  ASSERT_TRUE(engine);
  const std::string mine = self.filter();
  const std::string counted = "hist:keys=common_pid" + mine;
  const std::string failing = "hist:keys=common_pid:vals=__syscall_nr" + mine;
  // Where the failing trigger's table pins: made once, then removed.
  ASSERT_TRUE(engine->write_trigger("syscalls", "sys_enter_getppid", failing).ok());
  const std::vector<std::string> bases = pins_ending(options.deploy.pin_dir, "_table");
  ASSERT_EQ(bases.size(), 1u);
  ASSERT_TRUE(engine->write_trigger("syscalls", "sys_enter_getppid", "!" + failing).ok());
  ASSERT_TRUE(pins_ending(options.deploy.pin_dir, "_link").empty()) << "the event is still attached";
  // A non-empty directory where its stats map pins: the pin fails.
  const std::filesystem::path planted = options.deploy.pin_dir / (bases[0] + "_stats");
  ASSERT_TRUE(std::filesystem::create_directories(planted / "x"));

  auto r = engine->write_trigger("syscalls", "sys_enter_getppid", failing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("pinning a table under"), std::string::npos) << r.error().message();
  EXPECT_TRUE(pins_ending(options.deploy.pin_dir, "_link").empty()) << "a dispatcher was left attached";
  const std::string none = read_trigger(*engine, "syscalls", "sys_enter_getppid");
  EXPECT_EQ(none.find("hist:"), std::string::npos) << none;

  ASSERT_TRUE(engine->write_trigger("syscalls", "sys_enter_getppid", counted).ok());
  EXPECT_FALSE(engine->write_trigger("syscalls", "sys_enter_getppid", failing).ok());
  self.run([] {
    for (int i = 0; i < 3; ++i) getppid();
  });
  auto h = read_hist(*engine, "syscalls", "sys_enter_getppid");
  ASSERT_TRUE(h.ok()) << h.error().context;
  // The thread's one row (its pid is the machine's, which the test cannot
  // know). Other BPF work on a CPU can make the kernel skip an event (Missed).
  static const std::regex row(R"(\n\{ common_pid: +[0-9]+ \} hitcount: +3\n\nTotals:\n    Hits: 3\n    Entries: 1\n)");
  const bool three = std::regex_search(*h, row);
  EXPECT_TRUE(three || h->find("    Missed: ") != std::string::npos) << *h;
  const std::string lines = read_trigger(*engine, "syscalls", "sys_enter_getppid");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1) << lines;
  EXPECT_EQ(lines.find("__syscall_nr"), std::string::npos) << lines;

  std::filesystem::remove_all(planted);
  ASSERT_TRUE(engine->write_trigger("syscalls", "sys_enter_getppid", failing).ok());
  engine->shutdown();
  std::error_code ec;
  std::filesystem::remove_all(options.deploy.pin_dir, ec);
}

// Syscall events attach through the raw sys_enter / sys_exit tracepoints
// (the record rebuilt from the registers) unless raw_syscalls is off. Both
// must give the same rows, argument by argument. Calls on the named thread
// other than ours (mmap from malloc, say) add other rows: only ours are
// compared.
struct SyscallRun {
  std::string hist;                   // every event's hist, one after the other
  std::string debug;                  // and hist_debug
  std::vector<std::string> expected;  // our rows, as they must appear
};

SyscallRun trace_own_syscalls(bool raw) {
  SyscallRun out;
  engine::EngineOptions options;
  options.deploy.raw_syscalls = raw;
  auto engine = real_engine(options);
  EXPECT_TRUE(engine);
  if (!engine) return out;
  NamedThread self("tpsys");
  const std::string mine = self.filter();
  const std::vector<std::pair<std::string, std::string>> triggers = {
      {"sys_enter_write", "hist:keys=fd:vals=count"},
      {"sys_exit_write", "hist:keys=ret:vals=hitcount"},
      {"sys_enter_getppid", "hist:keys=__syscall_nr:vals=hitcount"},
      {"sys_exit_getppid", "hist:keys=__syscall_nr:vals=ret"},
      // all six argument registers: di, si, dx, r10, r8, r9
      {"sys_enter_mmap", "hist:keys=fd:vals=addr,len"},
      {"sys_enter_mmap", "hist:keys=fd:vals=prot,flags"},
      {"sys_enter_mmap", "hist:keys=fd,off"},
  };
  for (const auto& [event, cmd] : triggers) {
    auto r = engine->write_trigger("syscalls", event, cmd + mine);
    EXPECT_TRUE(r.ok()) << event << ": " << (r.ok() ? "" : r.error().message());
  }
  const int null = open("/dev/null", O_WRONLY);
  const int zero = open("/dev/zero", O_RDONLY);
  EXPECT_GE(null, 0);
  EXPECT_GE(zero, 0);
  self.run([&] {
    char buf[64] = {};
    for (int i = 0; i < 3; ++i) EXPECT_EQ(write(null, buf, 5), 5);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(write(null, buf, 40), 40);
    EXPECT_EQ(write(-1, buf, 1), -1);
    for (int i = 0; i < 4; ++i) getppid();
    for (int i = 1; i <= 2; ++i) {
      void* p = mmap(reinterpret_cast<void*>(0x10000000000), 8192, PROT_READ, MAP_PRIVATE, zero, 4096 * i);
      EXPECT_NE(p, MAP_FAILED);
      if (p != MAP_FAILED) munmap(p, 8192);
    }
  });
  close(null);
  close(zero);
  for (const char* event :
       {"sys_enter_write", "sys_exit_write", "sys_enter_getppid", "sys_exit_getppid", "sys_enter_mmap"}) {
    auto h = read_hist(*engine, "syscalls", event);
    EXPECT_TRUE(h.ok()) << event;
    if (h) out.hist += *h;
    out.debug += read_hist_debug(*engine, "syscalls", event) + "\n";
  }
  engine->shutdown();
  auto row = [](const std::string& key, const std::string& vals) {
    return fmt::format("{{ {} }} hitcount: {}\n", key, vals);
  };
  out.expected = {
      row(fmt::format("fd: {:>10}", null), fmt::format("{:>10}  count: {:>10}", 5, 3 * 5 + 2 * 40)),
      row(fmt::format("ret: {:>10}", 5), fmt::format("{:>10}", 3)),
      row(fmt::format("ret: {:>10}", 40), fmt::format("{:>10}", 2)),
      row(fmt::format("ret: {:>10}", static_cast<uint64_t>(-EBADF)), fmt::format("{:>10}", 1)),
      row(fmt::format("__syscall_nr: {:>10}", SYS_getppid), fmt::format("{:>10}", 4)),
      row(fmt::format("__syscall_nr: {:>10}", SYS_getppid), fmt::format("{:>10}  ret: {:>10}", 4, 4 * getppid())),
      row(fmt::format("fd: {:>10}", zero),
          fmt::format("{:>10}  addr: {:>10}  len: {:>10}", 2, 2 * 0x10000000000ULL, 2 * 8192)),
      row(fmt::format("fd: {:>10}", zero),
          fmt::format("{:>10}  prot: {:>10}  flags: {:>10}", 2, 2 * PROT_READ, 2 * MAP_PRIVATE)),
      row(fmt::format("fd: {:>10}, off: {:>10}", zero, 4096), fmt::format("{:>10}", 1)),
      row(fmt::format("fd: {:>10}, off: {:>10}", zero, 8192), fmt::format("{:>10}", 1)),
  };
  return out;
}

TEST(Tracepoint, SyscallEventsOnRawTracepointsCountLikeOnTheirOwn) {
  HISTD_REQUIRE_BPF();
  for (const bool raw : {true, false}) {
    const SyscallRun run = trace_own_syscalls(raw);
    for (const std::string& row : run.expected)
      EXPECT_NE(run.hist.find(row), std::string::npos) << (raw ? "raw" : "classic") << ": " << row << "in\n"
                                                       << run.hist;
    for (const char* kind : {"sys_enter", "sys_exit"}) {
      const std::string line = raw ? fmt::format("  attached: raw tracepoint {}, system call ", kind)
                                   : fmt::format("  attached: tracepoint syscalls:{}_", kind);
      EXPECT_NE(run.debug.find(line), std::string::npos) << line << "in\n" << run.debug;
    }
    const std::string other = raw ? "  attached: tracepoint " : "  attached: raw tracepoint ";
    EXPECT_EQ(run.debug.find(other), std::string::npos) << run.debug;
  }
}

// set_event_pid: while it lists a task, the programs see only its events,
// hist triggers included (the kernel's triggers need the record its
// buffer refuses an ignored task's event), on the classic syscall
// tracepoint and on the raw one alike. The listed pid is the machine's,
// as BPF sees the thread (runtime::HostPids), never the test's own view.
TEST(Tracepoint, SetEventPidHidesOtherTasksEventsFromTheTriggers) {
  HISTD_REQUIRE_BPF();
  for (const bool raw : {false, true}) {
    engine::EngineOptions options;
    options.deploy.raw_syscalls = raw;
    auto engine = real_engine(options);
    ASSERT_TRUE(engine);
    NamedThread keep("pidkeep");
    NamedThread drop("piddrop");
    const std::string cmd = fmt::format("hist:keys=common_comm if common_comm == \"{}\" || common_comm == \"{}\"",
                                        keep.comm(), drop.comm());
    auto r = engine->write_trigger("syscalls", "sys_enter_write", cmd);
    ASSERT_TRUE(r.ok()) << r.error().message();
    pid_t tid = 0;
    keep.run([&] { tid = static_cast<pid_t>(syscall(SYS_gettid)); });
    runtime::HostPids host;
    const std::vector<uint32_t> listed{host.host_pid(tid)};
    ASSERT_TRUE(engine->add_event_pids(listed).ok());
    EXPECT_EQ(engine->event_pids(), listed);
    const int null = open("/dev/null", O_WRONLY);
    ASSERT_GE(null, 0);
    auto writes = [null](NamedThread& t) {
      t.run([null] {
        char buf[8] = {};
        for (int i = 0; i < 3; ++i) EXPECT_EQ(write(null, buf, 5), 5);
      });
    };
    writes(keep);
    writes(drop);
    // A thread's entry: its hitcount, or "none".
    auto hits_of = [&engine](const NamedThread& t) {
      auto h = read_hist(*engine, "syscalls", "sys_enter_write");
      if (!h) return std::string("unreadable");
      std::smatch m;
      const std::regex row("\\{ common_comm: " + t.comm() + " +\\} hitcount: +([0-9]+)\n");
      return std::regex_search(*h, m, row) ? m[1].str() : std::string("none");
    };
    EXPECT_EQ(hits_of(keep), "3") << (raw ? "raw" : "classic");
    EXPECT_EQ(hits_of(drop), "none") << (raw ? "raw" : "classic");
    // No list: every task's events again.
    ASSERT_TRUE(engine->clear_event_pids().ok());
    EXPECT_TRUE(engine->event_pids().empty());
    writes(drop);
    EXPECT_EQ(hits_of(drop), "3") << (raw ? "raw" : "classic");
    close(null);
    engine->shutdown();
  }
}

}  // namespace
}  // namespace histd::testing
