// SPDX-License-Identifier: GPL-2.0-only
// The ring's consumer delivers notices under the engine's lock, which every
// trigger write and table read takes too. The first notice that names kernel
// addresses needs /proc/kallsyms read (a tenth of a second, seconds under a
// sanitizer): the consumer reads it before it takes the lock. Here the test
// holds the lock the consumer delivers under, and the symbols must still
// arrive; nothing is delivered until the lock is let go. Enabling a kernel
// event reads them before the engine's lock too.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

// sched:sched_switch with next_pid @56 (see inter_event_test.cpp).
Record switch_to(int32_t next_pid) { return Record(64).set<int32_t>(56, next_pid).set<int32_t>(60, 120); }

class RingSymbolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HISTD_REQUIRE_BPF();
    engine::EngineOptions o;
    o.defer_consumer = true;  // started by the test, under a lock of its own
    engine_ = fixture_engine(o);
    ASSERT_TRUE(engine_);
  }
  void TearDown() override {
    if (engine_) engine_->trace_ring().stop_consumer();
  }
  void ok(const CommandResult& r, const std::string& what) {
    ASSERT_TRUE(r.ok()) << what << ": " << r.error().message();
  }
  void add(const std::string& cmd) { ok(engine_->write_trigger("sched", "sched_switch", cmd), cmd); }
  void inject(int32_t next_pid) {
    auto r = engine_->inject("sched", "sched_switch", switch_to(next_pid).bytes());
    ASSERT_TRUE(r.ok()) << r.error().context;
  }
  // Up to 30 s (kallsyms alone takes seconds under ASan beside other tests).
  template <class Done>
  static bool wait_for(Done done) {
    for (int i = 0; i < 3000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  }
  // One record injected while the test holds the consumer's lock: the
  // symbols are read meanwhile (`reads_symbols`) or not, and the record is
  // delivered only once the lock is let go.
  void deliver_one_holding_the_lock(bool reads_symbols) {
    std::unique_lock hold(lock_);
    engine_->trace_ring().start_consumer(lock_);
    EXPECT_FALSE(engine_->resolver().has_symbols());
    inject(77);
    if (reads_symbols) {
      EXPECT_TRUE(wait_for([&] { return engine_->resolver().has_symbols(); }));
    } else {
      // What reaches the consumer is read once the lock goes; give it time
      // to have read the symbols if it were going to.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(engine_->trace_ring().delivered(), 0u);
    hold.unlock();
    EXPECT_TRUE(wait_for([&] { return engine_->trace_ring().delivered() >= 1; }));
    EXPECT_EQ(engine_->resolver().has_symbols(), reads_symbols);
  }
  std::mutex lock_;
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(RingSymbolsTest, StackTriggerReadsSymbolsBeforeTheLock) {
  add("stacktrace");
  deliver_one_holding_the_lock(true);
  const std::string t = engine_->trace_ring().read_trace();
  EXPECT_TRUE(std::regex_search(t, std::regex("<stack trace>\n => [A-Za-z_][A-Za-z0-9_.]*"))) << t;
}

TEST_F(RingSymbolsTest, TracedStackFieldReadsSymbolsBeforeTheLock) {
  ok(engine_->write_synthetic("stk_ev pid_t pid; unsigned long[] stack"), "stk_ev");
  add("hist:keys=next_pid:onmatch(sched.sched_switch).stk_ev(next_pid,common_stacktrace)");
  ok(engine_->set_enabled("synthetic", "stk_ev", true), "enable stk_ev");
  deliver_one_holding_the_lock(true);
  const std::string t = engine_->trace_ring().read_trace();
  EXPECT_TRUE(std::regex_search(t, std::regex("stk_ev: pid=77 stack=STACK:\n=> [A-Za-z_][A-Za-z0-9_.]*"))) << t;
}

// A traced synthetic event without a stack field prints no kernel address:
// histd does not hold the kernel's symbols for it.
TEST_F(RingSymbolsTest, TracedEventWithoutStacksLeavesSymbolsUnread) {
  ok(engine_->write_synthetic("pid_ev pid_t pid"), "pid_ev");
  add("hist:keys=next_pid:onmatch(sched.sched_switch).pid_ev(next_pid)");
  ok(engine_->set_enabled("synthetic", "pid_ev", true), "enable pid_ev");
  deliver_one_holding_the_lock(false);
  EXPECT_NE(engine_->trace_ring().read_trace().find("pid_ev: pid=77"), std::string::npos);
}

// An enabled kernel event's records are printed with the kernel's names,
// which the engine reads before it takes its lock for the command
// (TraceRing::read_kernel_names); a synthetic event's records need none.
TEST_F(RingSymbolsTest, EnablingAKernelEventReadsTheKernelNames) {
  ok(engine_->set_enabled("sched", "sched_switch", true), "enable sched_switch");
  EXPECT_TRUE(engine_->resolver().has_symbols());
}

TEST_F(RingSymbolsTest, EnablingASyntheticEventLeavesThemUnread) {
  ok(engine_->write_synthetic("pid_ev pid_t pid"), "pid_ev");
  ok(engine_->set_enabled("synthetic", "pid_ev", true), "enable pid_ev");
  EXPECT_FALSE(engine_->resolver().has_symbols());
}

}  // namespace
}  // namespace histd::testing
