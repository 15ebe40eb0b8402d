// SPDX-License-Identifier: GPL-2.0-only
// snapshot() actions take the kernel's snapshot: the live trace buffer and
// the snapshot buffer swap (update_max_tr()), nothing copied, nothing
// cleared: `snapshot` shows what was traced, and tracing goes on in what
// was the snapshot buffer, its old lines kept.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

// sched:sched_waking: pid @24. sched:sched_switch: next_pid @56.
Record waking(int32_t pid) {
  Record r(40);
  r.pid(1).set<int32_t>(24, pid).set<int32_t>(28, 120);
  return r;
}
Record switch_to(int32_t next_pid) {
  Record r(64);
  r.pid(0).set<int32_t>(56, next_pid).set<int32_t>(60, 120);
  return r;
}

class SnapshotTest : public EngineTest {
 protected:
  // A latency of at least `ms` for pid 42, which changes the tracked value.
  void latency(int ms) {
    inject("sched", "sched_waking", waking(42));
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    inject("sched", "sched_switch", switch_to(42));
  }
  void marker(const std::string& text) { ASSERT_TRUE(engine_->write_marker(text, 1, "marker").ok()); }
  bool in_trace(const std::string& text) { return engine_->trace_ring().read_trace().find(text) != std::string::npos; }
  bool in_snapshot(const std::string& text) {
    return engine_->trace_ring().read_snapshot().find(text) != std::string::npos;
  }
};

TEST_F(SnapshotTest, ASnapshotSwapsTheTraceAndSnapshotBuffersAsTheKernelDoes) {
  add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
  add("sched", "sched_switch", "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:onchange($lat).snapshot()");
  marker("before the first snapshot");
  latency(3);
  wait_delivered(1);
  EXPECT_TRUE(in_snapshot("tracing_mark_write: before the first snapshot\n")) << engine_->trace_ring().read_snapshot();
  // Tracing goes on in the former snapshot buffer, which was empty.
  EXPECT_FALSE(in_trace("before the first snapshot")) << engine_->trace_ring().read_trace();
  EXPECT_NE(engine_->trace_ring().read_trace().find("entries-in-buffer/entries-written: 0/0 "), std::string::npos);
  marker("between the snapshots");
  latency(20);
  wait_delivered(2);
  // Swapped back: the old lines are in `trace` again, nothing was cleared.
  EXPECT_TRUE(in_trace("tracing_mark_write: before the first snapshot\n")) << engine_->trace_ring().read_trace();
  EXPECT_FALSE(in_trace("between the snapshots"));
  EXPECT_TRUE(in_snapshot("tracing_mark_write: between the snapshots\n")) << engine_->trace_ring().read_snapshot();
  EXPECT_FALSE(in_snapshot("before the first snapshot"));
  // Clearing one clears that one.
  engine_->trace_ring().clear_snapshot();
  EXPECT_FALSE(in_snapshot("between the snapshots"));
  EXPECT_TRUE(in_trace("before the first snapshot"));
}

}  // namespace
}  // namespace histd::testing
