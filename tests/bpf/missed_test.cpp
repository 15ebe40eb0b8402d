// SPDX-License-Identifier: GPL-2.0-only
// Missed events: the kernel runs no BPF program on a tracepoint that fires
// while another BPF program runs on that CPU (its recursion guard), and
// counts the skip in the program's recursion_misses. The kernel's own hist
// triggers would have counted those events, so histd shows them: a
// "    Missed: N" line after the Totals (only when N > 0), the JSON totals,
// hist_debug and `histctl status`. Provoked here by another program
// (tests/faults/nested_printk.bpf.c) whose bpf_printk() fires
// bpf_trace:bpf_trace_printk from inside itself.
#include <gtest/gtest.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "bpf_test_support.h"
#include "control/protocol.h"
#include "control/server.h"
#include "test_paths.h"

namespace histd::testing {
namespace {

const std::string kSys = "bpf_trace";
const std::string kEvent = "bpf_trace_printk";

class MissedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HISTD_REQUIRE_BPF();
    // Misses are the event's, whoever provoked them: two of these tests at
    // once (ctest -j) would each count the other's. One at a time: a lock
    // on the test binary itself, which every process of it shares and which
    // leaves no lock file behind.
    lock_ = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(lock_, 0) << std::strerror(errno);
    ASSERT_EQ(flock(lock_, LOCK_EX), 0) << std::strerror(errno);
    obj_ = bpf_object__open_file((histd::testing::test_objects_dir() / "nested_printk.bpf.o").c_str(), nullptr);
    ASSERT_NE(obj_, nullptr) << std::strerror(errno);
    ASSERT_EQ(bpf_object__load(obj_), 0);
  }
  void TearDown() override {
    engine_.reset();
    bpf_object__close(obj_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    if (lock_ >= 0) close(lock_);  // releases the lock
  }
  void start(engine::EngineOptions opt = {}) {
    engine_ = real_engine(std::move(opt));
    ASSERT_TRUE(engine_);
  }
  void add(const std::string& cmd) {
    auto r = engine_->write_trigger(kSys, kEvent, cmd);
    ASSERT_TRUE(r.ok()) << cmd << ": " << r.error().message();
  }
  // Events histd's programs miss: a CPU clock samples the named thread
  // every 100 us of its CPU time for `ms`, and each sample's program prints.
  // Returns how many it printed.
  uint64_t nested(int ms) {
    uint64_t n = 0;
    self_.run([&] { n = nested_here(ms); });
    return n;
  }
  uint64_t nested_here(int ms) {
    const uint32_t zero = 0;
    const int printed = bpf_map__fd(bpf_object__find_map_by_name(obj_, "printed"));
    uint64_t before = 0, after = 0;
    EXPECT_EQ(bpf_map_lookup_elem(printed, &zero, &before), 0);
    perf_event_attr attr{};
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof(attr);
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = 100000;
    attr.disabled = 1;
    const int pfd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
    EXPECT_GE(pfd, 0) << std::strerror(errno);
    if (pfd < 0) return 0;
    bpf_link* link = bpf_program__attach_perf_event(bpf_object__find_program_by_name(obj_, "nested"), pfd);
    EXPECT_NE(link, nullptr) << std::strerror(errno);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    volatile uint64_t spin = 0;
    while (std::chrono::steady_clock::now() < until) spin = spin + 1;
    if (link)
      bpf_link__destroy(link);  // closes pfd too
    else
      close(pfd);
    EXPECT_EQ(bpf_map_lookup_elem(printed, &zero, &after), 0);
    return after - before;
  }
  // n events they see: `direct` prints from BPF_PROG_TEST_RUN, outside any guard.
  void direct(int n) {
    const int fd = bpf_program__fd(bpf_object__find_program_by_name(obj_, "direct"));
    self_.run([&] {
      for (int i = 0; i < n; ++i) {
        LIBBPF_OPTS(bpf_test_run_opts, opts);
        ASSERT_EQ(bpf_prog_test_run_opts(fd, &opts), 0) << std::strerror(errno);
      }
    });
  }
  std::string hist() {
    auto h = read_hist(*engine_, kSys, kEvent);
    EXPECT_TRUE(h.ok());
    return h ? *h : std::string();
  }
  // The test's events are the named thread's.
  std::string filter() const { return self_.filter(); }

  NamedThread self_{"missed"};
  bpf_object* obj_ = nullptr;
  int lock_ = -1;
  std::filesystem::path dir_;
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(MissedTest, HitsPlusMissedAreTheEventsAndEveryViewShowsThem) {
  start();
  add("hist:keys=common_pid" + filter());
  EXPECT_EQ(hist().find("Missed"), std::string::npos) << "none missed yet: the kernel's text";
  const uint64_t missed = nested(200);
  ASSERT_GT(missed, 0u);
  std::cout << "[missed] 200 ms of CPU-clock samples: " << missed << " nested prints, each a miss\n";
  direct(40);
  const std::string text = hist();
  const std::string totals =
      "\nTotals:\n    Hits: 40\n    Entries: 1\n    Dropped: 0\n    Missed: " + std::to_string(missed) + "\n";
  EXPECT_NE(text.find(totals), std::string::npos) << text;
  auto json = read_hist_json(*engine_, kSys, kEvent);
  ASSERT_TRUE(json.ok());
  const auto j = nlohmann::json::parse(*json)["tables"][0]["totals"];
  EXPECT_EQ(j["hits"].get<uint64_t>() + j["missed"].get<uint64_t>(), 40 + missed) << *json;
  const std::string debug = read_hist_debug(*engine_, kSys, kEvent);
  EXPECT_NE(debug.find("  missed: " + std::to_string(missed) + " events since this trigger began (" +
                       std::to_string(missed) + " since"),
            std::string::npos)
      << debug;
  bool listed = false;
  for (const engine::EventMissed& m : engine_->reads().missed())
    if (m.system == kSys && m.event == kEvent) listed = m.missed == missed;
  EXPECT_TRUE(listed);

  // A trigger added now missed nothing before it; a clear starts over.
  add("hist:keys=bpf_string" + filter());
  const uint64_t more = nested(50);
  ASSERT_GT(more, 0u);
  const std::string both = hist();
  EXPECT_NE(both.find("    Dropped: 0\n    Missed: " + std::to_string(missed + more) + "\n"), std::string::npos)
      << both;
  EXPECT_NE(both.find("    Dropped: 0\n    Missed: " + std::to_string(more) + "\n"), std::string::npos) << both;
  add("hist:keys=common_pid:clear" + filter());
  const std::string cleared = hist();
  EXPECT_EQ(cleared.find("Missed: " + std::to_string(missed + more) + "\n"), std::string::npos) << cleared;
}

TEST_F(MissedTest, StatusShowsTheTotalAndEachEvent) {
  start();
  add("hist:keys=common_pid" + filter());
  const uint64_t missed = nested(50);
  ASSERT_GT(missed, 0u);
  char tmpl[] = "/tmp/histd-missed-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  auto server = control::Server::start(*engine_, dir_ / "control.sock");
  ASSERT_TRUE(server.ok()) << server.error().context;
  auto ask = [&](bool as_json) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, (dir_ / "control.sock").c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_TRUE(control::write_frame(fd, {{"op", "status"}, {"json", as_json}}).ok());
    auto reply = control::read_frame(fd);
    close(fd);
    return reply ? reply->value("output", "") : std::string();
  };
  const std::string text = ask(false);
  const std::string n = std::to_string(missed);
  EXPECT_NE(text.find("missed events: " + n + "\n  bpf_trace:bpf_trace_printk " + n + "\n"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(ask(true));
  EXPECT_EQ(j["missed_events"], missed) << j.dump();
  EXPECT_EQ(j["missed_by_event"][0]["event"], "bpf_trace:bpf_trace_printk") << j.dump();
}

// Restored triggers count their misses from where the dispatcher's counter
// stands: a clean shutdown detached the old one, so they start from 0.
TEST_F(MissedTest, RestoredTriggersCountFromTheirDispatcher) {
  char tmpl[] = "/tmp/histd-missed-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  engine::EngineOptions opt;
  opt.state_file = dir_ / "triggers.json";
  start(opt);
  add("hist:keys=common_pid" + filter());
  ASSERT_GT(nested(20), 0u);
  add("hist:keys=bpf_string" + filter());
  ASSERT_GT(nested(20), 0u);
  engine_.reset();
  start(opt);
  ASSERT_TRUE(engine_->restorer().restore().empty());
  const std::string after = "    Missed: " + std::to_string(nested(50)) + "\n";
  const std::string text = hist();
  size_t both = 0;
  for (size_t at = 0; (at = text.find(after, at)) != std::string::npos; ++at) ++both;
  EXPECT_EQ(both, 2u) << text;
}

}  // namespace
}  // namespace histd::testing
