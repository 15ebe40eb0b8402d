// SPDX-License-Identifier: GPL-2.0-only
// The engine compiles with its resident compiler (histd-cc, started with the
// engine), and the object it answers loads and counts.
#include <gtest/gtest.h>

#include "bpf_test_support.h"
#include "histd/runtime.h"

namespace histd::testing {
namespace {

TEST_F(EngineTest, ResidentCompilerObjectLoadsAndCounts) {
  ASSERT_NE(engine_->compiler().server_pid(), 0) << "the engine did not start histd-cc";
  add("syscalls", "sys_enter_write", "hist:keys=fd:vals=count");
  // syscalls:sys_enter_write: fd u64 @16, count u64 @32.
  inject("syscalls", "sys_enter_write", Record(40).pid(100).set<uint64_t>(16, 3).set<uint64_t>(32, 10));
  inject("syscalls", "sys_enter_write", Record(40).pid(100).set<uint64_t>(16, 3).set<uint64_t>(32, 5));
  auto h = read_hist(*engine_, "syscalls", "sys_enter_write");
  ASSERT_TRUE(h.ok());
  EXPECT_NE(h->find("{ fd:          3 } hitcount:          2  count:         15\n"), std::string::npos) << *h;
  EXPECT_EQ(engine_->compiler().stats().by_server, 1u);
  EXPECT_EQ(engine_->compiler().stats().by_clang, 0u);
}

}  // namespace
}  // namespace histd::testing
