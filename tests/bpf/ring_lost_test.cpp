// SPDX-License-Identifier: GPL-2.0-only
// The ring buffer that carries traced synthetic events and snapshot()
// notices to histd is 4 MiB. When histd falls behind by a whole ring (here:
// its consumer not started yet), bpf_ringbuf_output()/_reserve() fail, and
// the generating program counts each record turned away: every record is
// then either delivered or counted, and the lost trace lines are reported
// in the trace buffer as tracefs reports its own lost events.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

// sched:sched_switch with next_pid @56 and next_prio @60 (see inter_event_test.cpp).
Record switch_to(int32_t next_pid, int32_t next_prio) {
  return Record(64).set<int32_t>(56, next_pid).set<int32_t>(60, next_prio);
}

// With 40 bytes of notice header, a 16-byte record (a field takes 8) and the ring's own 8,
// each record takes 64 bytes: 65536 fill the ring. Some 35000 find it full.
constexpr uint64_t kRecords = 100000;

// The sum of the trace's "CPU:N [LOST M EVENTS]" lines (std::regex is slow
// over 100k lines).
uint64_t lost_in(const std::string& trace) {
  uint64_t n = 0;
  for (size_t at = trace.find("\nCPU:"); at != std::string::npos; at = trace.find("\nCPU:", at + 1)) {
    const size_t count = trace.find(" [LOST ", at);
    const size_t end = trace.find('\n', at + 1);
    if (count == std::string::npos || count > end || trace.compare(end - 8, 8, " EVENTS]") != 0) continue;
    n += std::stoull(trace.substr(count + 7, end - 8 - count - 7));
  }
  return n;
}

class RingLostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HISTD_REQUIRE_BPF();
    engine::EngineOptions o;
    o.defer_consumer = true;                        // nothing drains the ring until start_consumer()
    o.deploy.trace_buffer_size = size_t{64} << 20;  // every delivered line stays
    engine_ = fixture_engine(o);
    ASSERT_TRUE(engine_);
    ASSERT_TRUE(engine_->write_synthetic("lostev int v").ok());
  }
  void add(const std::string& cmd) {
    auto r = engine_->write_trigger("sched", "sched_switch", cmd);
    ASSERT_TRUE(r.ok()) << cmd << ": " << r.error().message();
  }
  // kRecords events, each changing next_prio: each fires onchange() once.
  void flood() {
    for (uint64_t i = 0; i < kRecords; ++i) {
      auto r = engine_->inject("sched", "sched_switch", switch_to(7, 1 + static_cast<int32_t>(i % 2)).bytes());
      ASSERT_TRUE(r.ok()) << r.error().context;
    }
  }
  // Starts the consumer and waits until it has taken all that the ring held.
  void drain(uint64_t expected) {
    engine_->start_consumer();
    for (int i = 0; i < 1000 && engine_->trace_ring().delivered() < expected; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(engine_->trace_ring().delivered(), expected);
  }
  std::unique_ptr<engine::Engine> engine_;
};

TEST_F(RingLostTest, TraceRecordsTurnedAwayAreCounted) {
  add("hist:keys=next_pid:p=next_prio:onchange($p).trace(lostev,$p)");
  ASSERT_TRUE(engine_->set_enabled("synthetic", "lostev", true).ok());
  EXPECT_EQ(engine_->trace_ring().ring_lost().trace_records, 0u);
  flood();
  const engine::RingLost lost = engine_->trace_ring().ring_lost();
  EXPECT_GT(lost.trace_records, 0u);
  EXPECT_LT(lost.trace_records, kRecords);
  EXPECT_EQ(lost.snapshot_notices, 0u);
  drain(kRecords - lost.trace_records);
  // The consumer puts the losses into the trace as tracefs does, a line for
  // each CPU that lost records (after the batch it drained), and counts them
  // as written.
  std::string trace;
  for (int i = 0; i < 200 && lost_in(trace = engine_->trace_ring().read_trace()) < lost.trace_records; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(lost_in(trace), lost.trace_records);
  const uint64_t delivered = kRecords - lost.trace_records;
  EXPECT_NE(trace.find("# entries-in-buffer/entries-written: " + std::to_string(delivered) + "/" +
                       std::to_string(kRecords) + "   #P:"),
            std::string::npos)
      << trace.substr(0, 200);
}

TEST_F(RingLostTest, SnapshotNoticesTurnedAwayAreCounted) {
  add("hist:keys=next_pid:p=next_prio:onchange($p).snapshot()");
  flood();
  const engine::RingLost lost = engine_->trace_ring().ring_lost();
  EXPECT_GT(lost.snapshot_notices, 0u);
  EXPECT_EQ(lost.trace_records, 0u);
  drain(kRecords - lost.snapshot_notices);
  // Snapshots are not trace lines: nothing is said in the trace.
  EXPECT_EQ(engine_->trace_ring().read_trace().find("[LOST "), std::string::npos);
}

// A reader meets every record committed before its read, as in tracefs,
// however far behind the consumer is: here it has not taken a single record
// when the trace and snapshot are read, right after it starts.
TEST_F(RingLostTest, ReadsMeetEveryRecordCommittedBeforeThem) {
  add("hist:keys=next_pid:p=next_prio:onchange($p).trace(lostev,$p)");
  ASSERT_TRUE(engine_->set_enabled("synthetic", "lostev", true).ok());
  constexpr int kTraced = 1000;
  for (int i = 0; i < kTraced; ++i)
    ASSERT_TRUE(engine_->inject("sched", "sched_switch", switch_to(7, 1 + i % 2).bytes()).ok());
  engine_->start_consumer();
  const std::string trace = engine_->trace_ring().read_trace();
  EXPECT_NE(trace.find("# entries-in-buffer/entries-written: 1000/1000   #P:"), std::string::npos)
      << trace.substr(0, 200);
  // Records committed before a clear are gone with it.
  for (int i = 0; i < kTraced; ++i)
    ASSERT_TRUE(engine_->inject("sched", "sched_switch", switch_to(7, 1 + i % 2).bytes()).ok());
  engine_->trace_ring().clear_trace();
  EXPECT_EQ(engine_->trace_ring().read_trace().find("lostev:"), std::string::npos);
}

}  // namespace
}  // namespace histd::testing
