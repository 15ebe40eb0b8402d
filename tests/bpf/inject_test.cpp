// SPDX-License-Identifier: GPL-2.0-only
// Exact tables from injected records: the generated program runs for real
// (BPF_PROG_TEST_RUN on its raw_tp test entry) against a fixture catalog.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include <filesystem>

#include "bpf_test_support.h"
#include "test_paths.h"

namespace histd::testing {
namespace {

// syscalls:sys_enter_write: __syscall_nr int @8, fd u64 @16, buf @24, count @32.
Record write_record(int32_t pid, uint64_t fd, uint64_t count, int32_t nr = 1) {
  Record r(40);
  r.pid(pid).set<int32_t>(8, nr).set<uint64_t>(16, fd).set<uint64_t>(32, count);
  return r;
}

class InjectTest : public EngineTest {
 public:  // helpers shared with free test functions
  void add(const std::string& cmd) { EngineTest::add("syscalls", "sys_enter_write", cmd); }
  void inject(const Record& rec) { EngineTest::inject("syscalls", "sys_enter_write", rec); }
  std::string hist() {
    auto h = read_hist(*engine_, "syscalls", "sys_enter_write");
    EXPECT_TRUE(h.ok());
    return h.ok() ? *h : "";
  }
  // The engine again, its compiler keeping an object cache in a directory
  // of its own, removed after the test (the fixture's has none).
  void use_object_cache() {
    char dir[] = "/tmp/histd-object-cache-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir));
    cache_dir_ = dir;
    engine_->shutdown();
    auto catalog = catalog::Catalog::open(histd::testing::test_data_dir() / "fixtures" / "tracefs");
    auto paths = runtime::find_bpf_paths();
    ASSERT_TRUE(catalog.ok() && paths.ok());
    engine::EngineOptions opt;
    opt.deploy.attach = false;
    auto eng = engine::Engine::create(std::move(*catalog), runtime::Compiler(*paths, cache_dir_), opt);
    ASSERT_TRUE(eng.ok()) << eng.error().context;
    engine_ = std::move(*eng);
  }
  void TearDown() override {
    if (cache_dir_.empty()) return;
    if (engine_) engine_->shutdown();
    engine_.reset();
    std::filesystem::remove_all(cache_dir_);
  }
  uint64_t compiles() { return engine_->compiler().stats().by_server + engine_->compiler().stats().by_clang; }
  // `first` written and removed, then `second` written: whether `second`
  // was compiled (false: it loaded the object `first` left in the cache).
  bool compiled_anew(const std::string& first, const std::string& second) {
    add(first);
    EXPECT_GE(compiles(), 1u) << first;
    add("!" + first);
    const uint64_t before = compiles();
    add(second);
    return compiles() != before;
  }

 private:
  std::string cache_dir_;
};

TEST_F(InjectTest, KeysAndValueSum) {
  add("hist:keys=fd:vals=count");
  inject(write_record(100, 3, 10));
  inject(write_record(100, 3, 10));
  inject(write_record(100, 5, 7));
  EXPECT_EQ(hist(),
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=fd:vals=hitcount,count:sort=hitcount:size=2048 [active]\n"
            "#\n"
            "\n"
            "{ fd:          5 } hitcount:          1  count:          7\n"
            "{ fd:          3 } hitcount:          2  count:         20\n"
            "\n"
            "Totals:\n"
            "    Hits: 3\n"
            "    Entries: 2\n"
            "    Dropped: 0\n");
  EXPECT_EQ(read_trigger(*engine_, "syscalls", "sys_enter_write"),
            "hist:keys=fd:vals=hitcount,count:sort=hitcount:size=2048 [active]\n");
}

TEST_F(InjectTest, FilterDecidesWhatCounts) {
  add("hist:keys=common_pid:vals=count if (count > 10 && fd != 4) || common_pid == 7");
  inject(write_record(100, 3, 11));  // counts
  inject(write_record(100, 4, 11));  // fd 4: no
  inject(write_record(100, 3, 10));  // count 10: no
  inject(write_record(7, 4, 1));     // pid 7: yes
  EXPECT_EQ(hist(),
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=common_pid:vals=hitcount,count:sort=hitcount:size=2048 if (count > 10 && "
            "fd != 4) || common_pid == 7 [active]\n"
            "#\n"
            "\n"
            "{ common_pid:          7 } hitcount:          1  count:          1\n"
            "{ common_pid:        100 } hitcount:          1  count:         11\n"
            "\n"
            "Totals:\n"
            "    Hits: 2\n"
            "    Entries: 2\n"
            "    Dropped: 0\n");
}

// A filter's numbers are values the program is loaded with, not text: a
// trigger that differs from an earlier one only in them loads the cached
// object (no compile), and counts by its own numbers; two such triggers on
// one event each keep theirs.
TEST_F(InjectTest, AFilterNumberIsLoadedNotCompiled) {
  ASSERT_NO_FATAL_FAILURE(use_object_cache());
  EXPECT_FALSE(compiled_anew("hist:keys=fd if fd == 3", "hist:keys=fd if fd == 5"))
      << "the same unit as fd == 3: its cached object";
  // The control socket's source says the number the unit reads.
  EXPECT_NE(engine_->reads().event_source("syscalls", "sys_enter_write").source.find("\n/* histd: histd_k[] = 0x5 0x"),
            std::string::npos);
  for (uint64_t fd : {3, 5, 5}) inject(write_record(1, fd, 1));
  std::string h = hist();
  EXPECT_NE(h.find("{ fd:          5 } hitcount:          2\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("{ fd:          3 }"), std::string::npos) << h;
  add("hist:keys=fd if fd == 3");
  for (uint64_t fd : {3, 5, 7}) inject(write_record(1, fd, 1));
  h = hist();
  EXPECT_NE(h.find("{ fd:          5 } hitcount:          3\n"), std::string::npos) << h;
  EXPECT_NE(h.find("{ fd:          3 } hitcount:          1\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("{ fd:          7 }"), std::string::npos) << h;
}

// A trigger that differs from an earlier one only in which fields it reads
// loads the cached object too, and reads its own fields.
TEST_F(InjectTest, AFieldOffsetIsLoadedNotCompiled) {
  ASSERT_NO_FATAL_FAILURE(use_object_cache());
  EXPECT_FALSE(compiled_anew("hist:keys=fd:vals=count", "hist:keys=count:vals=fd"))
      << "the same unit as keys=fd:vals=count: its cached object";
  EXPECT_NE(engine_->reads()
                .event_source("syscalls", "sys_enter_write")
                .source.find("/* histd: struct histd_rec: f0 at 32 f1 at 16 */"),
            std::string::npos);
  inject(write_record(1, 3, 100));
  inject(write_record(1, 4, 100));
  inject(write_record(1, 5, 7));
  const std::string h = hist();
  EXPECT_NE(h.find("{ count:        100 } hitcount:          2  fd:          7\n"), std::string::npos) << h;
  EXPECT_NE(h.find("{ count:          7 } hitcount:          1  fd:          5\n"), std::string::npos) << h;
}

// A trigger that differs from an earlier one only in the string its filter
// compares loads the cached object too, and compares its own string.
TEST_F(InjectTest, AFilterStringIsLoadedNotCompiled) {
  ASSERT_NO_FATAL_FAILURE(use_object_cache());
  // The injected records' comm is this process's.
  char comm[16] = {};
  ASSERT_EQ(prctl(PR_GET_NAME, comm), 0);
  const std::string prefix = std::string(comm).substr(0, 5);
  EXPECT_FALSE(compiled_anew("hist:keys=fd if comm ~ \"bash*\"", "hist:keys=fd if comm ~ \"" + prefix + "*\""))
      << "the same unit as bash*: its cached object";
  inject(write_record(1, 3, 1));
  inject(write_record(1, 4, 1));
  // Compared with bash*, as the object was compiled for, neither would count.
  EXPECT_NE(hist().find("Hits: 2\n"), std::string::npos) << prefix << "* matches " << comm;
}

// A trigger that differs from an earlier one only in its size= loads the
// cached object too, and its table holds what its size says.
TEST_F(InjectTest, ATableSizeIsLoadedNotCompiled) {
  ASSERT_NO_FATAL_FAILURE(use_object_cache());
  EXPECT_FALSE(compiled_anew("hist:keys=fd:vals=count", "hist:keys=fd:vals=count:size=4096"))
      << "the same unit as the default size's: its cached object";
  for (uint64_t fd = 0; fd < 3000; ++fd) inject(write_record(1, fd, 1));
  const std::string h = hist();
  EXPECT_NE(h.find(":size=4096 [active]\n"), std::string::npos) << h.substr(0, 300);
  EXPECT_NE(h.find("Totals:\n    Hits: 3000\n    Entries: 3000\n    Dropped: 0\n"), std::string::npos)
      << h.substr(h.size() > 200 ? h.size() - 200 : 0);
}

TEST_F(InjectTest, SignedKeysPrintUnsignedAndSortWithinSort) {
  add("hist:keys=__syscall_nr,fd:vals=count:sort=__syscall_nr,count.descending");
  inject(write_record(1, 1, 5, -1));
  inject(write_record(1, 2, 50, -1));
  inject(write_record(1, 3, 9, 0));
  EXPECT_EQ(hist(),
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=__syscall_nr,fd:vals=hitcount,count:sort=__syscall_nr,count.descending:"
            "size=2048 [active]\n"
            "#\n"
            "\n"
            "{ __syscall_nr: 18446744073709551615, fd:          2 } hitcount:          1  count:         50\n"
            "{ __syscall_nr: 18446744073709551615, fd:          1 } hitcount:          1  count:          5\n"
            "{ __syscall_nr:          0, fd:          3 } hitcount:          1  count:          9\n"
            "\n"
            "Totals:\n"
            "    Hits: 3\n"
            "    Entries: 3\n"
            "    Dropped: 0\n");
}

TEST_F(InjectTest, Log2BucketsAndHex) {
  add("hist:keys=count.log2:vals=hitcount");
  add("hist:keys=count.buckets=100,fd.hex:vals=count.hex");
  for (uint64_t c : {0, 1, 2, 3, 4, 5, 1000}) inject(write_record(1, 255, c));
  EXPECT_EQ(hist(),
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=count.log2:vals=hitcount:sort=hitcount:size=2048 [active]\n"
            "#\n"
            "\n"
            "{ count: ~ 2^1  } hitcount:          1\n"
            "{ count: ~ 2^3  } hitcount:          1\n"
            "{ count: ~ 2^10 } hitcount:          1\n"
            "{ count: ~ 2^0  } hitcount:          2\n"
            "{ count: ~ 2^2  } hitcount:          2\n"
            "\n"
            "Totals:\n"
            "    Hits: 7\n"
            "    Entries: 5\n"
            "    Dropped: 0\n"
            "\n"
            "\n"
            "# event histogram\n"
            "#\n"
            "# trigger info: hist:keys=count.buckets=100,fd.hex:vals=hitcount,count.hex:sort=hitcount:size=2048 "
            "[active]\n"
            "#\n"
            "\n"
            "{ count: ~ 1000-1099, fd: ff } hitcount:          1  count:        3e8\n"
            "{ count: ~ 0-99, fd: ff } hitcount:          6  count:          f\n"
            "\n"
            "Totals:\n"
            "    Hits: 7\n"
            "    Entries: 2\n"
            "    Dropped: 0\n");
}

// A lone .log2 key is kept in a 65-slot array (plan::TableMap::Log2Slots):
// the same table as the hash would hold, down to the extreme slots, sums,
// sorting, clear and the map memory.
TEST_F(InjectTest, Log2SlotsHoldTheSameTableAsAHash) {
  add("hist:keys=count.log2:vals=fd:sort=count.descending");
  for (uint64_t c : {uint64_t{0}, uint64_t{1}, uint64_t{2}, (uint64_t{1} << 63) + 1, ~uint64_t{0}, uint64_t{1} << 40})
    inject(write_record(1, 3, c));
  const std::string expected =
      "# event histogram\n"
      "#\n"
      "# trigger info: hist:keys=count.log2:vals=hitcount,fd:sort=count.log2.descending:size=2048 [active]\n"
      "#\n"
      "\n"
      "{ count: ~ 2^64 } hitcount:          2  fd:          6\n"
      "{ count: ~ 2^40 } hitcount:          1  fd:          3\n"
      "{ count: ~ 2^1  } hitcount:          1  fd:          3\n"
      "{ count: ~ 2^0  } hitcount:          2  fd:          6\n"
      "\n"
      "Totals:\n"
      "    Hits: 6\n"
      "    Entries: 4\n"
      "    Dropped: 0\n";
  EXPECT_EQ(hist(), expected);
  const std::string debug = read_hist_debug(*engine_, "syscalls", "sys_enter_write");
  EXPECT_NE(debug.find("map: percpu_array of the 65 log2 slots, key_size: 4, value_size: 16"), std::string::npos)
      << debug;

  add("hist:keys=count.log2:vals=fd:sort=count.descending:clear");
  EXPECT_NE(hist().find("\n\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 0\n"), std::string::npos) << hist();
  inject(write_record(1, 3, 5));
  EXPECT_NE(hist().find("{ count: ~ 2^3  } hitcount:          1  fd:          3\n\nTotals:\n    Hits: 1\n"),
            std::string::npos)
      << hist();
}

// With a variable, or beside another key, .log2 stays in the hash.
TEST_F(InjectTest, Log2WithVariablesOrOtherKeysKeepsTheHash) {
  add("hist:keys=count.log2:x=fd");
  add("hist:keys=count.log2,fd");
  const std::string debug = read_hist_debug(*engine_, "syscalls", "sys_enter_write");
  EXPECT_EQ(debug.find("log2 slots"), std::string::npos) << debug;
  inject(write_record(1, 3, 4));
  EXPECT_NE(hist().find("{ count: ~ 2^2  } hitcount:          1\n"), std::string::npos) << hist();
}

TEST_F(InjectTest, FullTableDropsNewKeysAndKeepsCounting) {
  add("hist:keys=count:size=100");  // rounded up to 128
  for (uint64_t c = 0; c < 130; ++c) inject(write_record(1, 1, c));
  inject(write_record(1, 1, 0));  // an existing key still counts
  const std::string h = hist();
  EXPECT_NE(h.find("size=128 [active]"), std::string::npos) << h;
  EXPECT_NE(h.find("Totals:\n    Hits: 129\n    Entries: 128\n    Dropped: 2\n"), std::string::npos) << h;
  // Once full, a new key is a drop without asking the kernel again: each
  // one still counts.
  for (uint64_t c = 200; c < 210; ++c) inject(write_record(1, 1, c));
  EXPECT_NE(hist().find("Totals:\n    Hits: 129\n    Entries: 128\n    Dropped: 12\n"), std::string::npos) << hist();
  // Cleared, the table takes new keys again.
  add("hist:keys=count:size=100:clear");
  for (uint64_t c = 300; c < 305; ++c) inject(write_record(1, 1, c));
  EXPECT_NE(hist().find("Totals:\n    Hits: 5\n    Entries: 5\n    Dropped: 0\n"), std::string::npos) << hist();
}

TEST_F(InjectTest, PauseContinueClear) {
  add("hist:keys=fd:pause");
  inject(write_record(1, 1, 1));
  EXPECT_EQ(read_trigger(*engine_, "syscalls", "sys_enter_write"),
            "hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 [paused]\n");
  EXPECT_NE(hist().find("Hits: 0\n    Entries: 0\n"), std::string::npos);
  add("hist:keys=fd:cont");
  inject(write_record(1, 1, 1));
  inject(write_record(1, 2, 1));
  EXPECT_NE(hist().find("Hits: 2\n    Entries: 2\n"), std::string::npos);
  add("hist:keys=fd:clear");
  EXPECT_NE(hist().find("[active]\n#\n\n\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 0\n"), std::string::npos)
      << hist();
  inject(write_record(1, 2, 1));
  EXPECT_NE(hist().find("Hits: 1\n    Entries: 1\n"), std::string::npos);
}

TEST_F(InjectTest, RemoveByCommandOrPrintedLine) {
  add("hist:keys=fd");
  add("hist:keys=count:vals=fd if fd > 2");
  // The printed line, cut before " [active]", names the same trigger.
  add("!hist:keys=count:vals=hitcount,fd:sort=hitcount:size=2048 if fd > 2");
  EXPECT_EQ(read_trigger(*engine_, "syscalls", "sys_enter_write"),
            "hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 [active]\n");
  add("!hist:keys=fd");
  EXPECT_EQ(read_trigger(*engine_, "syscalls", "sys_enter_write"),
            "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist "
            "disable_hist hist\n");
  EXPECT_EQ(hist(), "");
}

TEST_F(InjectTest, DuplicateIsRefusedAndChangesNothing) {
  add("hist:keys=fd");
  inject(write_record(1, 1, 1));
  auto r = engine_->write_trigger("syscalls", "sys_enter_write", "hist:keys=fd:size=4096");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().error.err, EINVAL);
  ASSERT_TRUE(r.error().diagnostic);
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::TriggerEexist);
  EXPECT_NE(hist().find("Hits: 1\n"), std::string::npos);
  EXPECT_NE(read_error_log(*engine_).find("hist:syscalls:sys_enter_write: error: Hist trigger already exists\n"
                                          "  Command: hist:keys=fd:size=4096\n"
                                          "           ^\n"),
            std::string::npos)
      << read_error_log(*engine_);
}

TEST_F(InjectTest, BadCommandLogsCaretAndChangesNothing) {
  add("hist:keys=fd");
  auto r = engine_->write_trigger("syscalls", "sys_enter_write", "hist:keys=fd,junk:vals=count");
  ASSERT_FALSE(r.ok());
  const std::string log = read_error_log(*engine_);
  EXPECT_NE(log.find("hist:syscalls:sys_enter_write: error: Couldn't find field\n"
                     "  Command: hist:keys=fd,junk:vals=count\n"
                     "                        ^\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(read_trigger(*engine_, "syscalls", "sys_enter_write"),
            "hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 [active]\n");
  // The hist file shows the error until the next command on the event.
  const std::string error_block = "\nERROR: Couldn't find field\n  Last command: hist:keys=fd,junk:vals=count\n\n";
  EXPECT_NE(hist().find(error_block), std::string::npos) << hist();
  add("hist:keys=fd:pause");
  EXPECT_EQ(hist().find("ERROR:"), std::string::npos) << hist();
}

TEST_F(InjectTest, TruncateRemovesEveryTrigger) {
  add("hist:keys=fd");
  add("hist:keys=count");
  ASSERT_TRUE(engine_->truncate_triggers("syscalls", "sys_enter_write").ok());
  EXPECT_EQ(hist(), "");
  add("hist:keys=fd");  // and the event takes new triggers afterwards
  inject(write_record(1, 1, 1));
  EXPECT_NE(hist().find("Hits: 1\n"), std::string::npos);
}

}  // namespace
}  // namespace histd::testing

namespace histd::testing {
namespace {

void expect_timestamp_clock(InjectTest& t, const char* clock, clockid_t id);

TEST_F(InjectTest, TimestampValuesInMicroseconds) { expect_timestamp_clock(*this, "global", CLOCK_MONOTONIC); }
TEST_F(InjectTest, TimestampOnTheBootClock) { expect_timestamp_clock(*this, "boot", CLOCK_BOOTTIME); }

void expect_timestamp_clock(InjectTest& t, const char* clock, clockid_t id) {
  t.add(std::string("hist:keys=fd:vals=common_timestamp.usecs:clock=") + clock);
  struct timespec before {};
  clock_gettime(id, &before);
  t.inject(write_record(1, 7, 1));
  struct timespec after {};
  clock_gettime(id, &after);
  const std::string h = t.hist();
  EXPECT_NE(h.find(std::string("# trigger info: hist:keys=fd:vals=hitcount,common_timestamp.usecs:sort=hitcount:"
                               "size=2048:clock=") +
                   clock + " [active]\n"),
            std::string::npos)
      << h;
  const size_t at = h.find("common_timestamp: ");
  ASSERT_NE(at, std::string::npos) << h;
  const uint64_t us = std::stoull(h.substr(at + 18));
  EXPECT_GE(us, static_cast<uint64_t>(before.tv_sec) * 1000000 + before.tv_nsec / 1000);
  EXPECT_LE(us, static_cast<uint64_t>(after.tv_sec) * 1000000 + after.tv_nsec / 1000);
}

}  // namespace
}  // namespace histd::testing
