// SPDX-License-Identifier: GPL-2.0-only
// An attached event's hist triggers run in a chain of programs, a few
// triggers each, the event program first (docs/design/bpf.md,
// "Program chains"). Driven by the test's own getppid() calls on the real
// tracepoint, made on a thread of its own name (NamedThread): every trigger
// must count every call, whichever program holds it, through additions,
// removals and a chain that outgrows its slots.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

const std::string kSys = "syscalls", kEvent = "sys_enter_getppid";

// Every table's Hits, in the order the hist file shows the triggers.
std::vector<long> hits(engine::Engine& engine) {
  auto h = read_hist(engine, kSys, kEvent);
  EXPECT_TRUE(h.ok());
  std::vector<long> out;
  if (!h) return out;
  static const std::regex re("    Hits: ([0-9]+)\n");
  for (auto it = std::sregex_iterator(h->begin(), h->end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(std::stol((*it)[1]));
  return out;
}

// The programs after the event program, as the control socket's `source` shows them.
size_t chain_programs(engine::Engine& engine) {
  const std::string src = engine.reads().event_source(kSys, kEvent).source;
  size_t n = 0;
  for (size_t at = 0; (at = src.find("/* histd: chain slot ", at)) != std::string::npos; ++at) ++n;
  return n;
}

class ChainTest : public ::testing::Test {
 protected:
  void SetUp() override { HISTD_REQUIRE_BPF(); }
  void TearDown() override {
    if (engine_) engine_->shutdown();
  }
  void start(size_t per_program = 4) {
    engine::EngineOptions opt;
    opt.deploy.triggers_per_program = per_program;
    opt.deploy.test_entries = true;  // records are injected into the real event too
    engine_ = real_engine(opt);
    ASSERT_TRUE(engine_);
  }
  void add(const std::string& cmd, const std::string& event = kEvent) {
    auto r = engine_->write_trigger(kSys, event, cmd);
    ASSERT_TRUE(r.ok()) << cmd << ": " << r.error().message();
  }
  // A plain trigger counting the test's calls; `i` keeps the commands apart.
  std::string plain(int i) const {
    return "hist:keys=common_pid:vals=hitcount" + self_.filter() + " && common_pid != " + std::to_string(4000000 + i);
  }
  // A trigger with a variable (not plain) counting the test's calls.
  std::string with_var(int i) const {
    return "hist:keys=common_pid:v" + std::to_string(i) + "=common_pid" + self_.filter() +
           " && common_pid != " + std::to_string(4000000 + i);
  }
  void calls(int n) {
    self_.run([n] {
      for (int i = 0; i < n; ++i) getppid();
    });
  }
  NamedThread self_{"chain"};
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(ChainTest, FortyPlainTriggersOnOneEventEachCountEveryCall) {
  start();
  for (int i = 0; i < 40; ++i) ASSERT_NO_FATAL_FAILURE(add(plain(i)));
  EXPECT_EQ(chain_programs(*engine_), 10u);  // 4 triggers to a program
  calls(25);
  EXPECT_EQ(hits(*engine_), std::vector<long>(40, 25));
  // An injected record goes through every program's test entry (injected
  // from the thread: common_comm is the current task's).
  Record r(16);
  r.pid(1);
  self_.run([&] { ASSERT_TRUE(engine_->inject(kSys, kEvent, r.bytes()).ok()); });
  EXPECT_EQ(hits(*engine_), std::vector<long>(40, 26));
}

TEST_F(ChainTest, RemovalsLeaveTheOthersCountingAndNewTriggersFillTheGaps) {
  start();
  for (int i = 0; i < 10; ++i) ASSERT_NO_FATAL_FAILURE(add(plain(i)));
  ASSERT_EQ(chain_programs(*engine_), 3u);
  calls(5);
  // 4..7 were the second program's: it passes on, holding nothing.
  for (int i : {1, 4, 5, 6, 7}) ASSERT_NO_FATAL_FAILURE(add("!" + plain(i)));
  EXPECT_EQ(chain_programs(*engine_), 3u);
  calls(10);
  EXPECT_EQ(hits(*engine_), std::vector<long>(5, 15));
  // The new ones take the room first: no fourth program.
  for (int i = 10; i < 15; ++i) ASSERT_NO_FATAL_FAILURE(add(plain(i)));
  EXPECT_EQ(chain_programs(*engine_), 3u);
  calls(3);
  std::vector<long> expected(5, 18);
  expected.insert(expected.end(), 5, 3);
  EXPECT_EQ(hits(*engine_), expected);
  // The last program's triggers gone: its slot goes too.
  for (int i : {8, 9}) ASSERT_NO_FATAL_FAILURE(add("!" + plain(i)));
  EXPECT_EQ(chain_programs(*engine_), 2u);
  calls(2);
  expected.assign(3, 20);
  expected.insert(expected.end(), 5, 5);
  EXPECT_EQ(hits(*engine_), expected);
}

// A trigger with a variable goes to the event program, ahead of the chain;
// controls on another event pause the chained triggers as the others.
TEST_F(ChainTest, TheEventProgramRunsAheadOfTheChainAndControlsReachIt) {
  start();
  const std::string mine = self_.filter();
  ASSERT_NO_FATAL_FAILURE(add(plain(0)));
  ASSERT_NO_FATAL_FAILURE(add("hist:keys=common_pid:ts0=common_timestamp.usecs" + mine));
  for (int i = 1; i < 6; ++i) ASSERT_NO_FATAL_FAILURE(add(plain(i)));
  EXPECT_EQ(chain_programs(*engine_), 2u);
  calls(4);
  EXPECT_EQ(hits(*engine_), std::vector<long>(7, 4));
  // Without the event program the first of the chain is the dispatcher's.
  ASSERT_NO_FATAL_FAILURE(add("!hist:keys=common_pid:ts0=common_timestamp.usecs" + mine));
  calls(3);
  EXPECT_EQ(hits(*engine_), std::vector<long>(6, 7));
  ASSERT_NO_FATAL_FAILURE(add("disable_hist:syscalls:sys_enter_getppid" + mine, "sys_enter_getpid"));
  self_.run([] { getpid(); });
  calls(3);
  EXPECT_EQ(hits(*engine_), std::vector<long>(6, 7));
  auto h = read_hist(*engine_, kSys, kEvent);
  ASSERT_TRUE(h.ok());
  size_t paused = 0;
  for (size_t at = 0; (at = h->find("[paused]", at)) != std::string::npos; ++at) ++paused;
  EXPECT_EQ(paused, 6u) << *h;
}

// One trigger to a program here: the 32nd plain trigger would need a 32nd
// program after the event program's slot. Refused before anything loads,
// naming the limit; the others keep counting.
TEST_F(ChainTest, TheTriggerPastTheLastSlotIsRefusedNamingTheLimit) {
  start(1);
  for (int i = 0; i < 31; ++i) ASSERT_NO_FATAL_FAILURE(add(plain(i)));
  const std::string before = read_trigger(*engine_, kSys, kEvent);
  auto r = engine_->write_trigger(kSys, kEvent, plain(31));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, ENOSPC) << r.error().message();
  ASSERT_TRUE(r.error().diagnostic.has_value()) << r.error().message();
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::ChainLimit);
  const std::string log = read_error_log(*engine_);
  EXPECT_NE(log.find("hist:syscalls:sys_enter_getppid: error: too many programs in one event's chain: "
                     "syscalls:sys_enter_getppid would need 32 programs of 1 trigger each after its event "
                     "program (at most 31)\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(read_trigger(*engine_, kSys, kEvent), before);
  calls(2);
  EXPECT_EQ(hits(*engine_), std::vector<long>(31, 2));
}

// As many triggers with variables as the chain holds: the event program's
// four, then 31 programs of four. Each counts every call; the next is refused.
TEST_F(ChainTest, A128TriggersWithVariablesOnOneEventEachCountEveryCall) {
  start();
  for (int i = 0; i < 128; ++i) ASSERT_NO_FATAL_FAILURE(add(with_var(i)));
  EXPECT_EQ(chain_programs(*engine_), 31u);
  calls(5);
  EXPECT_EQ(hits(*engine_), std::vector<long>(128, 5));
  auto r = engine_->write_trigger(kSys, kEvent, with_var(128));
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(r.error().diagnostic.has_value()) << r.error().message();
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::ChainLimit);
  calls(1);
  EXPECT_EQ(hits(*engine_), std::vector<long>(128, 6));
}

// The triggers that are not plain run in the order they came, whichever
// program holds them: one in the chain reads, once, the variable the event
// program set on the same call (were it first, the first call would find
// none), and one whose action generates a synthetic event runs that
// event's trigger, added after it, as soon as it is added.
TEST_F(ChainTest, LaterTriggersInTheChainSeeWhatEarlierOnesSetOnTheSameEvent) {
  start();
  for (int i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(add(with_var(i)));
  ASSERT_EQ(chain_programs(*engine_), 0u);
  ASSERT_NO_FATAL_FAILURE(add("hist:keys=common_pid:x=$v0:vals=$x" + self_.filter()));
  auto made = engine_->write_synthetic("chain_syn int y");
  ASSERT_TRUE(made.ok()) << made.error().message();
  ASSERT_NO_FATAL_FAILURE(
      add("hist:keys=common_pid:y=$v1:onmatch(syscalls.sys_enter_getppid).chain_syn($y)" + self_.filter()));
  EXPECT_EQ(chain_programs(*engine_), 1u);
  calls(6);
  EXPECT_EQ(hits(*engine_), std::vector<long>(6, 6));
  auto r = engine_->write_trigger("synthetic", "chain_syn", "hist:keys=y");
  ASSERT_TRUE(r.ok()) << r.error().message();
  calls(3);
  auto syn = read_hist(*engine_, "synthetic", "chain_syn");
  ASSERT_TRUE(syn.ok());
  EXPECT_NE(syn->find("Hits: 3\n"), std::string::npos) << *syn;
  EXPECT_EQ(hits(*engine_), std::vector<long>(6, 9));
}

}  // namespace
}  // namespace histd::testing
