// SPDX-License-Identifier: GPL-2.0-only
// Limits that are not memory: synthetic events counted apart from triggers
// (--max-synthetic-events), and the kernel's 64 maps per BPF program, which
// all triggers of one event share. Each refusal is ENOSPC with an error_log
// line naming the limit, and changes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "bpf_test_support.h"
#include "test_paths.h"

namespace histd::testing {
namespace {

// BPF maps this process holds open: a refused command must leave none.
size_t open_maps() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec).string() == "anon_inode:bpf-map") ++n;
  }
  return n;
}

// The newest error_log entry without its timestamp.
std::string last_error(engine::Engine& engine) {
  const std::string log = read_error_log(engine);
  const size_t at = log.rfind("] ");
  return at == std::string::npos ? log : log.substr(at + 2);
}

class ProgramLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { HISTD_REQUIRE_BPF(); }
  void start(engine::EngineOptions opt = {}) {
    engine_ = fixture_engine(std::move(opt));
    ASSERT_TRUE(engine_);
  }
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(ProgramLimitsTest, SyntheticEventsHaveALimitOfTheirOwn) {
  engine::EngineOptions opt;
  opt.limits.max_synthetic_events = 3;
  start(opt);
  for (const char* def : {"e1 u64 a", "e2 u64 a", "e3 u64 a"}) ASSERT_TRUE(engine_->write_synthetic(def).ok());
  const std::string defined = read_synthetic(*engine_);
  const size_t maps = open_maps();
  auto r = engine_->write_synthetic("e4 u64 a; int b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, ENOSPC);
  ASSERT_TRUE(r.error().diagnostic.has_value());
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::SyntheticLimit);
  EXPECT_EQ(last_error(*engine_),
            "synthetic_events: error: too many synthetic events: the limit is 3 and 3 are defined\n"
            "  Command: e4 u64 a; int b\n"
            "           ^\n");
  EXPECT_EQ(read_synthetic(*engine_), defined);
  EXPECT_EQ(open_maps(), maps);
  EXPECT_EQ(engine_->reads().usage().synthetic_events, 3u);
  EXPECT_EQ(engine_->reads().usage().max_synthetic_events, 3u);
  // Triggers do not count against it, nor it against them.
  ASSERT_TRUE(engine_->write_trigger("synthetic", "e1", "hist:keys=a").ok());
  EXPECT_EQ(engine_->reads().usage().triggers, 1u);
  // Removing one makes room.
  ASSERT_TRUE(engine_->write_synthetic("!e2").ok());
  ASSERT_TRUE(engine_->write_synthetic("e4 u64 a; int b").ok());
}

// Before: synthetic events took the triggers' control slots, two each, and
// ~2000 of them left every new trigger a bare ENOSPC.
TEST_F(ProgramLimitsTest, AsManySyntheticEventsAsAllowedLeaveRoomForEveryTrigger) {
  engine::EngineOptions opt;
  opt.limits.max_synthetic_events = engine::kMaxSyntheticEvents;
  start(opt);
  for (size_t i = 0; i < engine::kMaxSyntheticEvents; ++i)
    ASSERT_TRUE(engine_->write_synthetic("s" + std::to_string(i) + " u64 a").ok()) << i;
  auto over = engine_->write_synthetic("one_more u64 a");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().error.err, ENOSPC);
  EXPECT_EQ(engine_->reads().usage().synthetic_events, engine::kMaxSyntheticEvents);
  auto r = engine_->write_trigger("syscalls", "sys_enter_write", "hist:keys=fd");
  EXPECT_TRUE(r.ok()) << r.error().message();
}

TEST_F(ProgramLimitsTest, OptionOutsideItsRangeIsRefused) {
  for (size_t bad : {size_t{0}, engine::kMaxSyntheticEvents + 1}) {
    engine::EngineOptions opt;
    opt.limits.max_synthetic_events = bad;
    runtime::init_libbpf(false);
    auto catalog = catalog::Catalog::open(histd::testing::test_data_dir() / "fixtures" / "tracefs");
    ASSERT_TRUE(catalog.ok());
    auto paths = runtime::find_bpf_paths();
    ASSERT_TRUE(paths.ok());
    opt.deploy.attach = false;
    auto eng = engine::Engine::create(std::move(*catalog), runtime::Compiler(*paths, {}), opt);
    ASSERT_FALSE(eng.ok()) << bad;
    EXPECT_EQ(eng.error().err, EINVAL);
  }
}

// Every trigger of an event is one BPF program; its table, stats and hot
// slots are three maps of the kernel's 64 per program. The trigger that
// would pass them is refused before any load, with the limit named (the
// kernel's own refusal was a bare E2BIG, or ENOSPC with string filters).
void expect_map_limit(engine::Engine& engine, const std::string& filter_of_i) {
  const std::string sys = "syscalls", ev = "sys_enter_write";
  int added = 0;
  engine::CommandResult r = Unit{};
  std::string triggers, command;
  size_t maps = 0;
  for (int i = 0; i < 40; ++i) {
    triggers = read_trigger(engine, sys, ev);
    maps = open_maps();
    command = "hist:keys=common_pid:vals=count if " + filter_of_i + std::to_string(i);
    r = engine.write_trigger(sys, ev, command);
    if (!r) break;
    ++added;
  }
  ASSERT_FALSE(r.ok()) << "40 triggers on one event fit";
  EXPECT_GE(added, 15);
  EXPECT_EQ(r.error().error.err, ENOSPC) << r.error().message();
  ASSERT_TRUE(r.error().diagnostic.has_value()) << r.error().message();
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::ProgramMapLimit);
  const std::string expected_start =
      "hist:syscalls:sys_enter_write: error: too many maps in one event's program: " + std::to_string(added + 1) +
      " triggers on syscalls:sys_enter_write would use ";
  EXPECT_EQ(last_error(engine).substr(0, expected_start.size()), expected_start) << last_error(engine);
  EXPECT_NE(last_error(engine).find(" maps (at most 64 per program)\n  Command: " + command + "\n"), std::string::npos)
      << last_error(engine);
  std::cout << "[limit] " << last_error(engine);
  EXPECT_EQ(read_trigger(engine, sys, ev), triggers);
  EXPECT_EQ(open_maps(), maps);
  // The triggers that fit still count.
  Record w(40);
  w.pid(1).set<int32_t>(16, 0).set<uint64_t>(32, 0);
  ASSERT_TRUE(engine.inject(sys, ev, w.bytes()).ok());
  EXPECT_NE(read_hist(engine, sys, ev)->find("    Hits: 1\n"), std::string::npos);
}

TEST_F(ProgramLimitsTest, TheTriggerPastTheMapsOfOneProgramIsRefusedNamingTheLimit) {
  start();
  expect_map_limit(*engine_, "fd == ");
}

TEST_F(ProgramLimitsTest, StringFiltersMeetTheSameLimitWithTheSameWords) {
  start();
  expect_map_limit(*engine_, "common_comm ~ \"histd*\" && fd == ");
}

// Triggers with string keys and glob filters stay under the maps limit (no
// hot slots) and may reach the verifier's own limits first. Its log at
// level 1 then outgrows the buffer, and the kernel answers ENOSPC for the
// cut log instead of its refusal: "No space left on device" for a program
// too complex to verify. The refusal must say what the verifier said (now
// that a glob's searches over a path are bpf_loop() rounds, this kernel's
// verifier takes as many such triggers as the maps allow).
TEST_F(ProgramLimitsTest, AProgramTooComplexToVerifySaysWhyNotENOSPC) {
  start();
  engine::CommandResult r = Unit{};
  int added = 0;
  for (int i = 0; i < 60 && r; ++i) {
    r = engine_->write_trigger(
        "sched", "sched_process_exec",
        "hist:keys=filename:vals=old_pid if filename ~ \"*x*y*\" && pid == " + std::to_string(i));
    if (r) ++added;
  }
  ASSERT_FALSE(r.ok()) << "60 triggers with globs fit in one program";
  std::cout << "[limit] refused after " << added << " triggers: " << r.error().message().substr(0, 400) << "\n";
  const std::string why = r.error().message();
  // The first limit met may be the maps of one program (their own words, ENOSPC).
  const bool maps = why.find("too many maps in one event's program") != std::string::npos;
  if (!maps) {
    EXPECT_NE(r.error().error.err, ENOSPC) << why;
  }
  EXPECT_EQ(why.find("No space left on device"), std::string::npos) << why;
  EXPECT_EQ(why.find("earlier bytes of the log left out"), std::string::npos) << why;
  const size_t log = why.find("the verifier log:\n");
  if (log != std::string::npos) {
    EXPECT_GT(why.size(), log + 20) << why;
    EXPECT_NE(why.find("the kernel's verifier gave up on the generated program as too complex"), std::string::npos)
        << why;
  } else
    EXPECT_NE(why.find("too many maps in one event's program"), std::string::npos) << why;
  EXPECT_EQ(engine_->reads().usage().triggers, static_cast<size_t>(added));
}

}  // namespace
}  // namespace histd::testing
