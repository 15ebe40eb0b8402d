// SPDX-License-Identifier: GPL-2.0-only
// The per-entry lines of onmax()/onchange() actions, as the kernel's
// print_actions() writes them: one line per tracking action that saves,
// none for snapshot() (its trace is the snapshot block under the table).
#include <gtest/gtest.h>

#include <cstring>

#include "histd/render.h"
#include "test_support.h"

namespace histd {
namespace {

// A variable record with every tracked value and saved field set to `v`.
std::vector<uint8_t> record_of(const plan::HistPlan& p, uint64_t v) {
  std::vector<uint8_t> record(p.var_record_size + 64, 0);
  for (const plan::ActionPlan& a : p.actions) {
    std::memcpy(record.data() + a.track_offset, &v, 8);
    for (const plan::SavedField& f : a.saves) std::memcpy(record.data() + f.offset, &v, 8);
  }
  return record;
}

TEST(TrackingRender, SnapshotActionsPrintNoLine) {
  const plan::HistPlan p = testing::plan_ok("hist:keys=common_pid:m=bytes_req:onmax($m).snapshot()");
  EXPECT_EQ(render::render_tracking(p, record_of(p, 7)), "");
}

TEST(TrackingRender, OnlyTheSavingActionOfASnapshotPairPrints) {
  const plan::HistPlan p =
      testing::plan_ok("hist:keys=common_pid:n=node:onchange($n).save(bytes_req,node):onchange($n).snapshot()");
  EXPECT_EQ(render::render_tracking(p, record_of(p, 3)),
            "\n\tchanged:          3  bytes_req:          3  node:          3");
}

}  // namespace
}  // namespace histd
