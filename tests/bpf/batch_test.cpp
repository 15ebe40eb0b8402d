// SPDX-License-Identifier: GPL-2.0-only
// Batches (a restore, a reload): each event's program is loaded once, at
// the end. What the kernel then refuses must come out as single commands
// would have: the triggers it accepts one by one count, the others are
// refused with the verifier's reason, and a restore keeps them saved.
// Triggers with string keys and glob filters reach the verifier's limits
// before the 64 maps per program (program_limits_test.cpp): 9 of these fit
// here (each compile takes a while: the fewer, the shorter the test).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

constexpr int kTriggers = 10;  // 31 would pass the 64 maps
const std::string kSys = "sched", kEvent = "sched_process_exec";

// Each matches its own record (pid i, "/bin/xyz"), and costs the verifier
// so much that not all ten fit in one program: three globs of eight
// two-byte searches over the comm, each walked inline, which the record
// never reaches (its filename matches first).
std::string command(int i) {
  std::string comm_globs;
  for (const char* g : {"*ab*cd*ef*gh*ij*kl*mn*op*", "*ba*dc*fe*hg*ji*lk*nm*po*", "*ac*bd*ce*df*eg*fh*gi*hj*"})
    comm_globs += std::string(" || common_comm ~ \"") + g + "\"";
  return "hist:keys=filename:vals=old_pid if (filename ~ \"*x*y*\"" + comm_globs + ") && pid == " + std::to_string(i);
}

// What the kernel's refusal of such a program says.
const std::string kTooComplex = "the kernel's verifier gave up on the generated program as too complex";

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HISTD_REQUIRE_BPF();
    char tmpl[] = "/tmp/histd-batch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.state_file = dir_ / "triggers.json";
  }
  void TearDown() override {
    engine_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  void start() {
    engine_ = fixture_engine(options_);
    ASSERT_TRUE(engine_);
  }
  // Which of command(0..kTriggers-1) are listed as deployed (not as saved
  // but not restored); each counts its own record (pid i).
  std::set<int> listed_and_counting() {
    std::set<int> listed;
    const std::vector<std::string> lines = list_triggers(*engine_);
    for (int i = 0; i < kTriggers; ++i)
      for (const std::string& line : lines)
        if (line.find(" && pid == " + std::to_string(i) + " [") != std::string::npos &&
            line.find("[not restored") == std::string::npos)
          listed.insert(i);
    for (int i : listed) {
      auto r = engine_->inject(kSys, kEvent, exec_record("/bin/xyz", i).bytes());
      EXPECT_TRUE(r.ok()) << r.error().context;
    }
    auto hist = read_hist(*engine_, kSys, kEvent);
    EXPECT_TRUE(hist.ok());
    if (hist) {
      EXPECT_EQ(count(*hist, "    Hits: 1\n"), listed.size()) << *hist;
    }
    return listed;
  }
  std::filesystem::path dir_;
  engine::EngineOptions options_;
  std::unique_ptr<engine::Engine> engine_;
};

// A reload's declarations: each accepted when made (planned, compiled, its
// maps counted), the program loaded at the end. The kernel refuses the
// whole; trigger by trigger it takes what it can.
TEST_F(BatchTest, WhatTheKernelRefusesAtTheEndIsRefusedAsItsOwnCommandWouldHaveBeen) {
  start();
  engine_->config().begin_batch();
  for (int i = 0; i < kTriggers; ++i) {
    const engine::ConfigItem item{engine::ConfigItem::Kind::Trigger, kSys + ":" + kEvent, command(i), true, {}};
    auto r = engine_->config().add(item, "batch.conf:" + std::to_string(i + 1));
    ASSERT_TRUE(r.ok()) << command(i) << ": " << r.error().message();
  }
  const std::vector<engine::BatchRefusal> refused = engine_->config().end_batch();
  ASSERT_FALSE(refused.empty()) << kTriggers << " triggers with globs fit in one program";
  const std::set<int> listed = listed_and_counting();
  EXPECT_GE(listed.size(), 5u);
  EXPECT_EQ(listed.size() + refused.size(), static_cast<size_t>(kTriggers));
  for (const engine::BatchRefusal& r : refused) {
    EXPECT_EQ(r.item.event, kSys + ":" + kEvent);
    const size_t at = r.item.text.rfind("== ");
    ASSERT_NE(at, std::string::npos) << r.item.text;
    EXPECT_EQ(listed.count(std::stoi(r.item.text.substr(at + 3))), 0u) << r.item.text << " is listed and refused";
    EXPECT_NE(r.failure.message().find(kTooComplex), std::string::npos) << r.failure.message();
  }
  const std::string log = read_error_log(*engine_);
  EXPECT_EQ(count(log, kTooComplex), refused.size()) << log;
  // The state file holds what is deployed, no more (each declared trigger
  // with its declaration).
  EXPECT_EQ(count(file_text(options_.state_file), "pid == "), 2 * listed.size());
}

// A state file saved with more triggers than the kernel now accepts in one
// program (saved while a batch was open; a new kernel may verify less):
// the restore restores what loads, and what does not stays saved, listed
// with its reason, for the next start or `histctl restore`.
TEST_F(BatchTest, ARestoreTheKernelRefusesWholeRestoresWhatLoadsAndKeepsTheRestSaved) {
  start();
  engine_->config().begin_batch();
  for (int i = 0; i < kTriggers; ++i) {
    auto r = engine_->write_trigger(kSys, kEvent, command(i));
    ASSERT_TRUE(r.ok()) << command(i) << ": " << r.error().message();
  }
  const std::string saved = file_text(options_.state_file);
  ASSERT_EQ(count(saved, "pid == "), static_cast<size_t>(kTriggers)) << saved;
  engine_.reset();
  {
    std::ofstream out(options_.state_file, std::ios::trunc);
    out << saved;
  }
  start();
  const std::vector<std::string> problems = engine_->restorer().restore();
  const std::set<int> listed = listed_and_counting();
  EXPECT_GE(listed.size(), 5u);
  const engine::RestoreReport report = engine_->restorer().report();
  EXPECT_EQ(listed.size() + report.not_restored.size(), static_cast<size_t>(kTriggers));
  ASSERT_FALSE(report.not_restored.empty());
  for (const engine::NotRestored& n : report.not_restored)
    EXPECT_NE(n.reason.find(kTooComplex), std::string::npos) << n.reason;
  EXPECT_EQ(problems.size(), report.not_restored.size() + 1);  // and the summary line
  // Every saved trigger is still in the state file.
  EXPECT_EQ(count(file_text(options_.state_file), "pid == "), static_cast<size_t>(kTriggers));
}

// A reload's declarations are the batch's own: each program is compiled
// once, at the end, not again with each trigger it gains. A user's command
// made meanwhile is compiled at once (its write must not succeed and then
// be taken back), with the declarations its program holds.
TEST_F(BatchTest, ADeclarationIsCompiledAtTheEndAUsersCommandMeanwhileAtOnce) {
  start();
  auto compiles = [this] {
    const runtime::Compiler::Stats s = engine_->shared_compiler()->stats();
    return s.by_server + s.by_clang;
  };
  const uint64_t before = compiles();
  engine_->config().begin_batch();
  for (int i = 0; i < 3; ++i) {
    const engine::ConfigItem item{engine::ConfigItem::Kind::Trigger, kSys + ":" + kEvent, command(i), true, {}};
    auto r = engine_->config().add(item, "batch.conf:" + std::to_string(i + 1));
    ASSERT_TRUE(r.ok()) << command(i) << ": " << r.error().message();
  }
  EXPECT_EQ(compiles(), before) << "a declaration was compiled before the batch's end";
  auto user = engine_->write_trigger(kSys, kEvent, command(3));
  ASSERT_TRUE(user.ok()) << user.error().message();
  EXPECT_EQ(compiles(), before + 1) << "a user's command in a batch is compiled when it is made";
  EXPECT_TRUE(engine_->config().end_batch().empty());
  // Once more at the end (these tests have no object cache to find it in).
  EXPECT_EQ(compiles(), before + 2);
  EXPECT_EQ(listed_and_counting(), (std::set<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace histd::testing
