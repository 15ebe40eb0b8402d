// SPDX-License-Identifier: GPL-2.0-only
// Shared by the privileged tests: the feature probe, engines over fixture or
// real catalogs, and record builders.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "histd/engine.h"
#include "histd/render.h"

namespace histd::testing {

// Skips (loudly) where root or BPF is missing; where the environment says the
// capability must be there (CI sets HISTD_REQUIRE_PRIVILEGED=1), fails instead.
#define HISTD_REQUIRE_BPF()                                                                    \
  do {                                                                                         \
    std::string why_ = ::histd::testing::missing_capability();                                 \
    if (!why_.empty()) {                                                                       \
      if (std::getenv("HISTD_REQUIRE_PRIVILEGED")) FAIL() << "required but missing: " << why_; \
      GTEST_SKIP() << "SKIP: " << why_;                                                        \
    }                                                                                          \
  } while (0)

std::string missing_capability();

// The engine's reads rendered as the tree renders them (daemon/fs): the
// texts of its files.
Expected<std::string> read_hist(engine::Engine& engine, const std::string& system, const std::string& event,
                                const render::Options& options = {});
Expected<std::string> read_hist_json(engine::Engine& engine, const std::string& system, const std::string& event,
                                     const render::Options& options = {});
std::string read_hist_debug(engine::Engine& engine, const std::string& system, const std::string& event);
std::string read_trigger(engine::Engine& engine, const std::string& system, const std::string& event);
std::string read_error_log(engine::Engine& engine);
std::string read_synthetic(engine::Engine& engine);
// `histctl list`'s lines, without their newlines.
std::vector<std::string> list_triggers(engine::Engine& engine);

// An engine over tests/unit/fixtures/tracefs that never attaches: records
// reach its programs through the test entry only.
std::unique_ptr<engine::Engine> fixture_engine(engine::EngineOptions options = {});
// An engine over the machine's real tracefs, attaching for real.
std::unique_ptr<engine::Engine> real_engine(engine::EngineOptions options = {});

// A record laid out as an event's format says, little-endian.
class Record {
 public:
  explicit Record(size_t size) : bytes_(size, 0) {}
  template <class T>
  Record& set(size_t offset, T value) {
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
    return *this;
  }
  Record& pid(int32_t pid) { return set<int32_t>(4, pid); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// A fixture engine per test, with helpers that assert as they go.
class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HISTD_REQUIRE_BPF();
    engine_ = fixture_engine();
    ASSERT_TRUE(engine_);
  }
  void add(const std::string& sys, const std::string& ev, const std::string& cmd) {
    auto r = engine_->write_trigger(sys, ev, cmd);
    ASSERT_TRUE(r.ok()) << cmd << ": " << r.error().message();
  }
  void inject(const std::string& sys, const std::string& ev, const Record& rec) {
    auto r = engine_->inject(sys, ev, rec.bytes());
    ASSERT_TRUE(r.ok()) << r.error().context;
  }
  // What reaches histd through its ring (trace lines, snapshot notices,
  // records of enabled events) is delivered by its consumer thread: waits
  // until `n` have been. Up to 30 s: the first stack delivered reads
  // /proc/kallsyms, 1.5 s in the sanitized build alone, past 3 s beside
  // another test.
  void wait_delivered(uint64_t n) {
    for (int i = 0; i < 3000 && engine_->trace_ring().delivered() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(engine_->trace_ring().delivered(), n);
  }
  std::unique_ptr<engine::Engine> engine_;
};

// Everything a refused write must leave as it was: the synthetic events, every
// trigger, and the tables (with their counts) of `events` ("system:event"),
// without the "ERROR:" lines a refused command adds below a hist file's tables.
std::string observable_state(engine::Engine& engine, const std::vector<std::string>& events);

// sched:sched_process_exec: __data_loc char[] filename @8, pid @12, old_pid @16.
Record exec_record(const std::string& filename, int32_t pid = 1);

// Tests never filter on their own pid. BPF, like the kernel's hist
// triggers, sees a task's pid in the machine's first PID namespace, while
// getpid() and gettid() answer in the test's own: another one in a
// container, where a filter on them matches nothing. A test filters on a
// comm of its own instead, making its events on a thread of that name
// (docs/design/tests.md).
//
// `n` random characters [a-z0-9]: for names that must be unique on the
// machine (a kernel tracefs instance, a pin directory), where a pid is not:
// a container's processes have pids of its own namespace, counted from 1 as
// another container's are.
std::string unique_suffix(size_t n = 6);

// A pin directory of this test's own, /sys/fs/bpf/histd-test-<tag>-<random>-<pid>:
// random, as above, and ending in the pid because tests/sweep.sh (run by
// every ctest run on the machine, another checkout's too) keeps a BPF
// test's pins only while that pid is a test binary; without it, pins are
// swept from under a running test.
std::filesystem::path test_pin_dir(const std::string& tag);

// A thread with a name no other task on the machine has: `tag` (8
// characters at most) and a random suffix. It runs what `run` gives it,
// always on the same thread (one common_pid, as a test's process had).
class NamedThread {
 public:
  explicit NamedThread(const std::string& tag);
  ~NamedThread();
  NamedThread(const NamedThread&) = delete;
  NamedThread& operator=(const NamedThread&) = delete;

  const std::string& comm() const { return comm_; }
  // ` if common_comm == "<comm>"`: a trigger's filter on this thread.
  std::string filter() const { return " if common_comm == \"" + comm_ + "\""; }
  // Runs `work` on the thread; returns when it is done.
  void run(const std::function<void()>& work);

 private:
  void loop();

  const std::string comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* work_ = nullptr;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace histd::testing
