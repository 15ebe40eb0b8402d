// SPDX-License-Identifier: GPL-2.0-only
// An enabled kernel event's program copies each record to the ring, and
// histd prints it into `trace` with the event's print fmt: exact
// records injected through the test entry give exact trace lines, strings
// after the fixed part included; nothing is recorded once disabled.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

// sched:sched_process_exec (fixture id 365): a __data_loc filename @8, pid
// @12, old_pid @16, the string after the fixed part.
Record exec_record(int32_t pid, const std::string& filename) {
  Record r(20 + filename.size() + 1);
  r.set<uint16_t>(0, 365).pid(pid);
  r.set<uint32_t>(8, uint32_t(filename.size() + 1) << 16 | 20);
  r.set<int32_t>(12, pid).set<int32_t>(16, pid);
  for (size_t i = 0; i < filename.size(); ++i) r.set<char>(20 + i, filename[i]);
  return r;
}

using RecordTest = EngineTest;

TEST_F(RecordTest, AnEnabledEventsRecordsArePrintedAsTheKernelPrintsThem) {
  ASSERT_TRUE(engine_->set_enabled("sched", "sched_process_exec", true).ok());
  EXPECT_TRUE(engine_->reads().enabled("sched", "sched_process_exec"));
  inject("sched", "sched_process_exec", exec_record(4242, "/usr/bin/true"));
  wait_delivered(1);
  const std::string trace = engine_->trace_ring().read_trace();
  EXPECT_TRUE(std::regex_search(
      trace,
      std::regex(
          R"(\n +[^ ]+-4242 +\[\d{3}\] \.\.\.\.\. +\d+\.\d{6}: sched_process_exec: filename=/usr/bin/true pid=4242 old_pid=4242\n)")))
      << trace;

  // A hist trigger beside it: both see the record, the trace line first.
  add("sched", "sched_process_exec", "hist:keys=pid");
  inject("sched", "sched_process_exec", exec_record(4343, "/bin/sh"));
  wait_delivered(2);
  EXPECT_NE(engine_->trace_ring().read_trace().find("filename=/bin/sh pid=4343 old_pid=4343\n"), std::string::npos);
  auto hist = read_hist(*engine_, "sched", "sched_process_exec");
  ASSERT_TRUE(hist.ok());
  EXPECT_NE(hist->find("{ pid:       4343 } hitcount:          1"), std::string::npos) << *hist;

  // Disabled: the trigger still counts, nothing more is traced.
  ASSERT_TRUE(engine_->set_enabled("sched", "sched_process_exec", false).ok());
  engine_->trace_ring().clear_trace();
  inject("sched", "sched_process_exec", exec_record(4444, "/bin/ls"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(engine_->trace_ring().read_trace().find("sched_process_exec"), std::string::npos)
      << engine_->trace_ring().read_trace();
  hist = read_hist(*engine_, "sched", "sched_process_exec");
  ASSERT_TRUE(hist.ok());
  EXPECT_NE(hist->find("{ pid:       4444 } hitcount:          1"), std::string::npos) << *hist;
}

TEST_F(RecordTest, ARecordLongerThanTheBufferIsCutNotRefused) {
  ASSERT_TRUE(engine_->set_enabled("sched", "sched_process_exec", true).ok());
  // A location word claiming more than a record holds (no kernel writes
  // one): the copy stops at the buffer's end (4096 bytes) and the line is
  // still printed, the string as libtraceevent bounds it.
  Record r = exec_record(77, "/x");
  r.set<uint32_t>(8, uint32_t(0xffff) << 16 | 20);
  inject("sched", "sched_process_exec", r);
  wait_delivered(1);
  EXPECT_TRUE(std::regex_search(engine_->trace_ring().read_trace(),
                                std::regex(R"(sched_process_exec: filename=\S* pid=77 old_pid=77\n)")))
      << engine_->trace_ring().read_trace();
}

}  // namespace
}  // namespace histd::testing
