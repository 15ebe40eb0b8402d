// SPDX-License-Identifier: GPL-2.0-only
// The engine's limits (EngineOptions: triggers, map memory, trace buffer)
// and the map-memory formula held against the kernel's own figures.
#include <gtest/gtest.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "bpf_test_support.h"
#include "histd/plan.h"
#include "histd/plan_memory.h"
#include "test_paths.h"

namespace histd::testing {
namespace {

const std::string kSys = "syscalls";
const std::string kEvent = "sys_enter_write";
// struct histd_table_stats: hits and drops, two u64.
constexpr uint32_t kStatsSize = 16;

// The kernel's charge for a map: fdinfo's "memlock:" line.
uint64_t memlock_of_map_id(uint32_t id) {
  int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) return 0;
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
  std::string line;
  uint64_t memlock = 0;
  while (std::getline(in, line))
    if (line.rfind("memlock:", 0) == 0) memlock = std::strtoull(line.c_str() + 8, nullptr, 10);
  close(fd);
  return memlock;
}

// BPF maps this process holds open: a refused command must create none.
size_t open_maps() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string() == "anon_inode:bpf-map") ++n;
  }
  return n;
}

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { HISTD_REQUIRE_BPF(); }
  void start(engine::EngineOptions opt) {
    engine_ = fixture_engine(std::move(opt));
    ASSERT_TRUE(engine_);
  }
  engine::CommandResult write(const std::string& cmd, const std::string& event = kEvent) {
    return engine_->write_trigger(kSys, event, cmd);
  }
  void add(const std::string& cmd, const std::string& event = kEvent) {
    auto r = write(cmd, event);
    ASSERT_TRUE(r.ok()) << cmd << ": " << r.error().message();
  }
  // The last error_log entry without its timestamp.
  std::string last_error() {
    const std::string log = read_error_log(*engine_);
    const size_t at = log.rfind("] hist:");
    return at == std::string::npos ? log : log.substr(at + 2);
  }
  uint32_t cpus() const { return static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1)); }
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(LimitsTest, OptionsOutsideTheirRangeAreRefused) {
  runtime::init_libbpf(false);
  auto catalog = catalog::Catalog::open(histd::testing::test_data_dir() / "fixtures" / "tracefs");
  ASSERT_TRUE(catalog.ok());
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok());
  for (size_t bad : {size_t{0}, engine::kMaxTriggers + 1}) {
    engine::EngineOptions opt;
    opt.deploy.attach = false;
    opt.limits.max_triggers = bad;
    auto eng = engine::Engine::create(*catalog, runtime::Compiler(*paths, {}), opt);
    ASSERT_FALSE(eng.ok()) << bad;
    EXPECT_EQ(eng.error().err, EINVAL);
  }
  engine::EngineOptions opt;
  opt.deploy.attach = false;
  opt.deploy.trace_buffer_size = 100;
  EXPECT_FALSE(engine::Engine::create(*catalog, runtime::Compiler(*paths, {}), opt).ok());
}

TEST_F(LimitsTest, TheTriggerAfterTheLastOneAllowedIsRefusedAndNothingChanges) {
  engine::EngineOptions opt;
  opt.limits.max_triggers = 3;
  start(opt);
  add("hist:keys=fd");
  add("hist:keys=count");
  add("enable_hist:syscalls:sys_enter_write", "sys_exit_write");  // enable triggers count too
  const std::string triggers = read_trigger(*engine_, kSys, kEvent);
  const size_t maps = open_maps();
  const uint64_t memory = engine_->reads().usage().map_memory;

  auto r = write("hist:keys=common_pid");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, ENOSPC);
  ASSERT_TRUE(r.error().diagnostic.has_value());
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::TriggerLimit);
  EXPECT_EQ(last_error(),
            "hist:syscalls:sys_enter_write: error: too many triggers: the limit is 3 and 3 are in use\n"
            "  Command: hist:keys=common_pid\n"
            "           ^\n");
  EXPECT_EQ(read_trigger(*engine_, kSys, kEvent), triggers);
  EXPECT_EQ(open_maps(), maps);
  EXPECT_EQ(engine_->reads().usage().map_memory, memory);
  EXPECT_EQ(engine_->reads().usage().triggers, 3u);
  // A control trigger is refused the same way.
  auto e = write("traceoff", "sys_exit_write");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().error.err, ENOSPC);

  // Removing one makes room.
  add("!hist:keys=count");
  add("hist:keys=common_pid");
  EXPECT_EQ(engine_->reads().usage().triggers, 3u);
}

TEST_F(LimitsTest, ATableTooBigForTheMemoryLimitIsRefusedBeforeAnyMapExists) {
  engine::EngineOptions opt;
  opt.limits.max_map_memory = 1 << 20;
  start(opt);
  add("hist:keys=fd");
  const uint64_t in_use = engine_->reads().usage().map_memory;
  const std::string triggers = read_trigger(*engine_, kSys, kEvent);
  const size_t maps = open_maps();

  auto r = write("hist:keys=count:size=131072");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, ENOSPC);
  ASSERT_TRUE(r.error().diagnostic.has_value());
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::MapMemoryLimit);
  // The caret sits under size=.
  const uint64_t needs = plan::hash_map_bytes(8, 8, 131072, true, cpus()) +
                         plan::array_map_bytes(kStatsSize, 1, true, cpus()) +
                         plan::array_map_bytes(8 + 8 + 8, 256, true, cpus());  // the hot slots
  EXPECT_EQ(last_error(),
            "hist:syscalls:sys_enter_write: error: hist trigger would exceed the map memory limit: it needs " +
                std::to_string(needs) + " bytes, " + std::to_string(in_use) +
                " of the 1048576 bytes allowed are "
                "in use\n"
                "  Command: hist:keys=count:size=131072\n"
                "                           ^\n");
  EXPECT_EQ(read_trigger(*engine_, kSys, kEvent), triggers);
  EXPECT_EQ(open_maps(), maps);
  EXPECT_EQ(engine_->reads().usage().map_memory, in_use);
  EXPECT_EQ(engine_->reads().usage().triggers, 1u);
  // The hist file shows the error, as for any refused command.
  auto hist = read_hist(*engine_, kSys, kEvent);
  ASSERT_TRUE(hist.ok());
  EXPECT_NE(hist->find("ERROR: hist trigger would exceed the map memory limit"), std::string::npos) << *hist;
}

TEST_F(LimitsTest, TablesFillTheMemoryLimitAndRemovingOneFreesRoom) {
  // Room for exactly two default tables (8-byte key, hitcount).
  const plan::MapMemory one{plan::hash_map_bytes(8, 8, 2048, true, cpus()),
                            plan::array_map_bytes(kStatsSize, 1, true, cpus()), 0,
                            plan::array_map_bytes(8 + 8 + 8, 256, true, cpus())};
  engine::EngineOptions opt;
  opt.limits.max_map_memory = 2 * one.total() + one.total() / 2;
  start(opt);
  add("hist:keys=fd");
  add("hist:keys=count");
  EXPECT_EQ(engine_->reads().usage().map_memory, 2 * one.total());
  auto r = write("hist:keys=common_pid");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, ENOSPC);
  // A smaller table still fits.
  add("hist:keys=common_pid:size=256");
  add("!hist:keys=common_pid:size=256");
  add("!hist:keys=fd");
  add("hist:keys=common_pid");
  EXPECT_EQ(engine_->reads().usage().map_memory, 2 * one.total());
}

TEST_F(LimitsTest, ANamedTableCountsOnce) {
  const uint64_t table =
      plan::hash_map_bytes(8, 8, 2048, true, cpus()) + plan::array_map_bytes(kStatsSize, 1, true, cpus());
  engine::EngineOptions opt;
  opt.limits.max_map_memory = table + table / 2;  // one table, not two
  start(opt);
  add("hist:name=both:keys=common_pid");
  add("hist:name=both:keys=common_pid", "sys_exit_write");
  EXPECT_EQ(engine_->reads().usage().map_memory, table);
  const auto info = engine_->reads().trigger_info();
  ASSERT_EQ(info.size(), 2u);
  for (const engine::TriggerInfo& t : info) {
    EXPECT_EQ(t.memory.total(), table);
    EXPECT_EQ(t.shared_table, "both");
  }
  EXPECT_EQ(info[0].table_map_id, info[1].table_map_id);
  const std::string debug = read_hist_debug(*engine_, kSys, kEvent);
  EXPECT_NE(debug.find("  map memory: " + std::to_string(table) + " bytes"), std::string::npos) << debug;
  EXPECT_NE(debug.find("shared with the other triggers of named table both: counted once"), std::string::npos);
}

TEST_F(LimitsTest, VariableMapsCountAndAFieldVariableOverTheLimitUndoesEverything) {
  engine::EngineOptions opt;
  opt.limits.max_triggers = 2;
  start(opt);
  ASSERT_TRUE(engine_->write_synthetic("lat u64 delta; int prio").ok());
  ASSERT_TRUE(engine_->write_trigger("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp").ok());
  // The onmatch() param sched.sched_waking.prio needs a field variable there:
  // a third trigger, one too many.
  auto r = engine_->write_trigger("sched", "sched_switch",
                                  "hist:keys=next_pid:d=common_timestamp-$ts0:"
                                  "onmatch(sched.sched_waking).lat($d,sched.sched_waking.prio)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, ENOSPC);
  EXPECT_EQ(engine_->reads().usage().triggers, 1u);
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_switch"),
            "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist "
            "disable_hist hist\n");
  EXPECT_NE(last_error().find("too many triggers: the limit is 2 and 1 are in use; this command needs 2 with its "
                              "field variables\n"),
            std::string::npos)
      << read_error_log(*engine_);
}

// The formula against the kernel's memlock for the maps the engine created.
// Stated tolerance (docs/design/limits.md): within 2% or 256 bytes, whichever is more.
TEST_F(LimitsTest, FormulaMatchesTheKernelsMemlock) {
  start({});
  add("hist:keys=fd");                                 // the default: 2048 entries, 8-byte key
  add("hist:keys=common_pid,fd:vals=count:size=100");  // 16-byte key, two values, 128 buckets
  add("hist:keys=common_stacktrace:size=512");         // 128-byte key
  add("hist:keys=count.log2:vals=fd");                 // the 65-slot per-CPU array
  ASSERT_TRUE(
      engine_->write_trigger("sched", "sched_waking",
                             "hist:keys=comm:ts0=common_timestamp:onmax($ts0).save(prio)")
          .ok());  // variable records after the values
  ASSERT_TRUE(engine_->write_trigger("sched", "sched_waking", "hist:name=w:keys=pid:t1=common_timestamp").ok());
  // a named table's variables: a map of their own
  size_t checked = 0;
  for (const engine::TriggerInfo& t : engine_->reads().trigger_info()) {
    struct Part {
      const char* name;
      uint64_t formula;
      uint32_t id;
    } parts[] = {{"table", t.memory.table, t.table_map_id},
                 {"stats", t.memory.stats, t.stats_map_id},
                 {"vars", t.memory.vars, t.vars_map_id},
                 {"hot", t.memory.hot, t.hot_map_id}};
    for (const Part& p : parts) {
      if (p.id == 0) {
        EXPECT_EQ(p.formula, 0u) << t.line << " " << p.name;
        continue;
      }
      const uint64_t kernel = memlock_of_map_id(p.id);
      ASSERT_GT(kernel, 0u) << "no memlock for " << p.name << " of " << t.line;
      const uint64_t diff = kernel > p.formula ? kernel - p.formula : p.formula - kernel;
      const uint64_t tolerance = std::max<uint64_t>(256, kernel / 50);
      EXPECT_LE(diff, tolerance) << t.line << " " << p.name << ": formula " << p.formula << ", kernel " << kernel;
      std::cout << "[memory] " << t.system << ":" << t.event << " " << t.line << " " << p.name << ": formula "
                << p.formula << " kernel memlock " << kernel << "\n";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6u * 2 + 1 + 2);  // hot slots: keys=fd and keys=common_pid,fd
}

// Over --percpu-table-limit a table is one shared hash (atomic adds): the same
// table, the same clear, and the formula still the kernel's memlock.
TEST_F(LimitsTest, TablesOverThePerCpuLimitAreSharedAndCountTheSame) {
  engine::EngineOptions opt;
  opt.limits.percpu_table_limit = 64 << 10;  // the default 2048-entry table is 193 KiB per-CPU on 2 CPUs
  start(opt);
  add("hist:keys=fd:vals=count:size=128");    // 10 KiB: per-CPU
  add("hist:keys=fd,common_pid:vals=count");  // shared
  add("hist:keys=common_pid.execname");       // shared, with the comm kept in the value
  for (int i = 0; i < 3; ++i) {
    testing::Record r(40);
    r.pid(77).set<int32_t>(8, 1).set<uint64_t>(16, 5).set<uint64_t>(32, 10 + i);
    ASSERT_TRUE(engine_->inject(kSys, kEvent, r.bytes()).ok());
  }
  auto hist = read_hist(*engine_, kSys, kEvent);
  ASSERT_TRUE(hist.ok());
  for (const char* row : {"{ fd:          5 } hitcount:          3  count:         33\n",
                          "{ fd:          5, common_pid:         77 } hitcount:          3  count:         33\n",
                          "[        77] } hitcount:          3\n"})  // .execname: this test's comm
    EXPECT_NE(hist->find(row), std::string::npos) << row << "\nin\n" << *hist;
  const std::string debug = read_hist_debug(*engine_, kSys, kEvent);
  size_t shared = 0;
  for (size_t at = 0; (at = debug.find("map: hash (shared by all CPUs, atomic adds)", at)) != std::string::npos; ++at)
    ++shared;
  EXPECT_EQ(shared, 2u) << debug;
  for (const engine::TriggerInfo& t : engine_->reads().trigger_info()) {
    const uint64_t kernel = memlock_of_map_id(t.table_map_id);
    EXPECT_EQ(t.memory.table, kernel) << t.line;
  }
  add("hist:keys=fd,common_pid:vals=count:clear");
  hist = read_hist(*engine_, kSys, kEvent);
  ASSERT_TRUE(hist.ok());
  EXPECT_EQ(hist->find("common_pid:         77 } hitcount"), std::string::npos) << *hist;
}

TEST_F(LimitsTest, TheTraceBufferHoldsWhatItWasGiven) {
  engine::EngineOptions opt;
  opt.deploy.trace_buffer_size = 4096;
  start(opt);
  const std::string text(100, 'x');
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(engine_->write_marker(text, 1, "marker").ok());
  const std::string trace = engine_->trace_ring().read_trace();
  size_t bytes = 0, lines = 0;
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') {
      bytes += line.size() + 1;
      ++lines;
    }
  EXPECT_LE(bytes, 4096u);
  EXPECT_GT(lines, 10u);
  EXPECT_LT(lines, 200u);
  EXPECT_EQ(engine_->reads().usage().trace_buffer_size, 4096u);
}

}  // namespace
}  // namespace histd::testing
