// SPDX-License-Identifier: GPL-2.0-only
// enable_hist / disable_hist: one event's BPF program flips the pause flags
// of another event's hist triggers.
#include <gtest/gtest.h>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

Record write_record(uint64_t fd) {
  Record r(40);
  r.pid(1).set<uint64_t>(16, fd);
  return r;
}

class EnableHistTest : public EngineTest {
 protected:
  uint64_t hits() {
    const std::string h = *read_hist(*engine_, "syscalls", "sys_enter_write");
    const size_t at = h.find("Hits: ");
    return at == std::string::npos ? 0 : std::stoull(h.substr(at + 6));
  }
};

TEST_F(EnableHistTest, ExecStartsAndExitStopsAggregation) {
  add("syscalls", "sys_enter_write", "hist:keys=fd:pause");
  add("sched", "sched_process_exec", "enable_hist:syscalls:sys_enter_write if filename == \"/usr/bin/wget\"");
  add("sched", "sched_process_exit", "disable_hist:syscalls:sys_enter_write");
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_process_exec"),
            "enable_hist:syscalls:sys_enter_write:unlimited if filename == \"/usr/bin/wget\"\n");

  inject("syscalls", "sys_enter_write", write_record(1));
  EXPECT_EQ(hits(), 0u);
  inject("sched", "sched_process_exec", exec_record("/usr/bin/curl"));  // filtered out
  inject("syscalls", "sys_enter_write", write_record(1));
  EXPECT_EQ(hits(), 0u);
  inject("sched", "sched_process_exec", exec_record("/usr/bin/wget"));
  EXPECT_NE(read_trigger(*engine_, "syscalls", "sys_enter_write").find("[active]"), std::string::npos);
  inject("syscalls", "sys_enter_write", write_record(1));
  inject("syscalls", "sys_enter_write", write_record(2));
  EXPECT_EQ(hits(), 2u);
  Record exit(32);
  exit.pid(1);
  inject("sched", "sched_process_exit", exit);
  inject("syscalls", "sys_enter_write", write_record(3));
  EXPECT_EQ(hits(), 2u);
  EXPECT_NE(read_trigger(*engine_, "syscalls", "sys_enter_write").find("[paused]"), std::string::npos);
}

TEST_F(EnableHistTest, CountLimitsFiringsAndNewTargetTriggersAreCovered) {
  add("sched", "sched_process_exec", "enable_hist:syscalls:sys_enter_write:2");
  // A trigger added to the target after the enable_hist is still covered.
  add("syscalls", "sys_enter_write", "hist:keys=fd:pause");
  inject("sched", "sched_process_exec", exec_record("/bin/a"));
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_process_exec"), "enable_hist:syscalls:sys_enter_write:count=1\n");
  add("syscalls", "sys_enter_write", "hist:keys=fd:pause");
  inject("sched", "sched_process_exec", exec_record("/bin/a"));
  add("syscalls", "sys_enter_write", "hist:keys=fd:pause");
  inject("sched", "sched_process_exec", exec_record("/bin/a"));  // count exhausted
  EXPECT_NE(read_trigger(*engine_, "syscalls", "sys_enter_write").find("[paused]"), std::string::npos);
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_process_exec"), "enable_hist:syscalls:sys_enter_write:count=0\n");
}

TEST_F(EnableHistTest, DuplicatesRefusedRemovalByTarget) {
  add("sched", "sched_process_exec", "enable_hist:syscalls:sys_enter_write");
  auto r = engine_->write_trigger("sched", "sched_process_exec", "enable_hist:syscalls:sys_enter_write:5");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().diagnostic->code, ErrorCode::TriggerEexist);
  auto bad = engine_->write_trigger("sched", "sched_process_exec", "enable_hist:nosuch:event");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().diagnostic->code, ErrorCode::InvalidSubsysEvent);
  add("sched", "sched_process_exec", "!enable_hist:syscalls:sys_enter_write:unlimited");
  EXPECT_EQ(read_trigger(*engine_, "sched", "sched_process_exec"),
            "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist "
            "disable_hist hist\n");
}

}  // namespace
}  // namespace histd::testing
