// SPDX-License-Identifier: GPL-2.0-only
// Planner: layouts as data, the printed trigger line, and the accept/reject
// matrix with error positions (inline-caret notation: '^' marks the byte the
// caret must point at; it is removed before parsing).
#include <gtest/gtest.h>

#include "histd/pipeline.h"
#include "histd/plan.h"
#include "test_support.h"

namespace histd::plan {
namespace {

using histd::testing::field;

using histd::testing::kmalloc;
using histd::testing::plan_ok;

// Expects `marked` (with one '^') to fail with `code` at the caret.
void expect_error(std::string marked, ErrorCode code) {
  const size_t caret = marked.find('^');
  ASSERT_NE(caret, std::string::npos) << marked;
  std::string cmd = marked;
  cmd.erase(caret, 1);
  auto r = pipeline::plan_command(cmd, kmalloc());
  ASSERT_FALSE(r.ok()) << cmd;
  EXPECT_EQ(error_name(r.error().code), error_name(code)) << cmd;
  EXPECT_EQ(r.error().span.begin, caret) << cmd << "\n" << r.error().command;
}

TEST(Plan, SeedKmallocExamplePrintsAsTheKernel) {
  EXPECT_EQ(plan_ok("hist:key=call_site:val=bytes_req").trigger_text(),
            "hist:keys=call_site:vals=hitcount,bytes_req:sort=hitcount:size=2048");
  EXPECT_EQ(plan_ok("hist:key=call_site.hex:val=bytes_req").trigger_text(),
            "hist:keys=call_site.hex:vals=hitcount,bytes_req:sort=hitcount:size=2048");
  EXPECT_EQ(plan_ok("hist:keys=call_site:values=bytes_req,bytes_alloc:sort=bytes_alloc.descending").trigger_text(),
            "hist:keys=call_site:vals=hitcount,bytes_req,bytes_alloc:sort=bytes_alloc.descending:size=2048");
  EXPECT_EQ(plan_ok("hist:name=foo:keys=ptr.hex:vals=bytes_req").trigger_text(),
            "hist:name=foo:keys=ptr.hex:vals=hitcount,bytes_req:sort=hitcount:size=2048");
  EXPECT_EQ(plan_ok("hist:keys=node:vals=hitcount:size=100 if bytes_req > 4096").trigger_text(),
            "hist:keys=node:vals=hitcount:sort=hitcount:size=128 if bytes_req > 4096");
  EXPECT_EQ(plan_ok("hist:keys=bytes_req.log2:sort=bytes_req.ascending").trigger_text(),
            "hist:keys=bytes_req.log2:vals=hitcount:sort=bytes_req.log2:size=2048");
  EXPECT_EQ(plan_ok("hist:keys=bytes_req.buckets=64").trigger_text(),
            "hist:keys=bytes_req.buckets=64:vals=hitcount:sort=hitcount:size=2048");
  EXPECT_EQ(plan_ok("hist:keys=cpu").trigger_text(), "hist:keys=common_cpu:vals=hitcount:sort=hitcount:size=2048");
}

TEST(Plan, ClockShowsWhenTimestampsAreUsed) {
  EXPECT_EQ(plan_ok("hist:keys=node:vals=common_timestamp.usecs").trigger_text(),
            "hist:keys=node:vals=hitcount,common_timestamp.usecs:sort=hitcount:size=2048:clock=global");
  HistPlan boot = plan_ok("hist:keys=node:vals=common_timestamp:clock=boot");
  EXPECT_EQ(boot.trigger_text(), "hist:keys=node:vals=hitcount,common_timestamp:sort=hitcount:size=2048:clock=boot");
  EXPECT_EQ(boot.clock_source, HistPlan::Clock::Boot);
  EXPECT_EQ(plan_ok("hist:keys=node:clock=tai").trigger_text(), "hist:keys=node:vals=hitcount:sort=hitcount:size=2048");
}

TEST(Plan, KeyLayoutUsesEightByteSlots) {
  HistPlan p = plan_ok("hist:keys=common_pid,comm,node:vals=bytes_req,bytes_alloc");
  ASSERT_EQ(p.keys.size(), 3u);
  EXPECT_EQ(p.keys[0].offset, 0u);
  EXPECT_EQ(p.keys[0].size, 8u);
  EXPECT_EQ(p.keys[0].access.source, Source::CommonPid);
  EXPECT_EQ(p.keys[1].offset, 8u);
  EXPECT_EQ(p.keys[1].size, 24u);  // char[16] + NUL, rounded to 8
  EXPECT_EQ(p.keys[1].display, table::KeyDisplay::String);
  EXPECT_EQ(p.keys[2].offset, 32u);
  EXPECT_TRUE(p.keys[2].access.is_signed);
  EXPECT_EQ(p.keys[2].access.offset, 48u);
  EXPECT_EQ(p.key_size, 40u);
  ASSERT_EQ(p.vals.size(), 3u);
  EXPECT_EQ(p.vals[0].access.source, Source::Hitcount);
  EXPECT_EQ(p.value_size(), 24u);
}

TEST(Plan, SizeRoundsUpToAPowerOfTwo) {
  EXPECT_EQ(plan_ok("hist:keys=node:size=1").max_entries, 128u);
  EXPECT_EQ(plan_ok("hist:keys=node:size=129").max_entries, 256u);
  EXPECT_EQ(plan_ok("hist:keys=node:size=131072").max_entries, 131072u);
  EXPECT_EQ(plan_ok("hist:keys=node").max_entries, 2048u);
}

TEST(Plan, RemovalIdentityIgnoresSize) {
  EXPECT_EQ(plan_ok("hist:keys=node:size=4096").identity(), plan_ok("hist:keys=node:vals=hitcount").identity());
  EXPECT_NE(plan_ok("hist:keys=node if node == 1").identity(), plan_ok("hist:keys=node").identity());
}

TEST(Plan, FilterConstantsAreTruncatedToTheFieldWidth) {
  HistPlan p = plan_ok("hist:keys=node if node == -1 && bytes_req >= 0x10");
  ASSERT_TRUE(p.filter);
  const auto& terms = p.filter->terms;
  bool saw_node = false;
  for (const FilterTerm& t : terms)
    if (t.kind == FilterTerm::Kind::Compare && t.field.offset == 48) {
      EXPECT_EQ(t.constant, ~uint64_t{0});
      saw_node = true;
    }
  EXPECT_TRUE(saw_node);
}

TEST(Plan, Errors) {
  expect_error("hist:keys=^junk", ErrorCode::FieldNotFound);
  expect_error("hist:keys=node:vals=^junk", ErrorCode::FieldNotFound);
  expect_error("hist:keys=node,ptr,call_site,^bytes_req", ErrorCode::TooManyKeys);
  expect_error("hist:keys=node:vals=ptr,call_site,^bytes_req", ErrorCode::TooManyVals);
  expect_error("hist:keys=node:sort=^bytes_req", ErrorCode::InvalidSortField);
  expect_error("hist:keys=node:^sort=hitcount,node,hitcount", ErrorCode::TooManySortFields);
  expect_error("hist:keys=node:^size=262144", ErrorCode::InvalidSize);
  expect_error("hist:keys=node:vals=bytes_req.^log2", ErrorCode::BadFieldModifier);
  expect_error("hist:keys=node.^percent", ErrorCode::BadFieldModifier);
  expect_error("hist:keys=node.^execname", ErrorCode::BadFieldModifier);
  expect_error("hist:keys=node:vals=^comm", ErrorCode::StringValue);
  expect_error("hist:keys=^common_type", ErrorCode::Unsupported);
  // The kernel's carets: one past a field's name, one past a value's first character.
  expect_error("hist:keys=node if junk ^== 1", ErrorCode::FilterFieldNotFound);
  expect_error("hist:keys=node if node == a^bc", ErrorCode::FilterInvalidValue);
  expect_error("hist:keys=node if bytes_req == -^1", ErrorCode::FilterIllegalIntval);
  expect_error("hist:keys=node if bytes_req == 1^x", ErrorCode::FilterIllegalIntval);
  expect_error("hist:keys=node if bytes_req == n^ode", ErrorCode::FilterInvalidValue);
  expect_error("hist:keys=node if bytes_req == \"^1\"", ErrorCode::FilterExpectDigit);
  expect_error("hist:keys=node if bytes_req > \"^1\"", ErrorCode::FilterIllegalFieldOp);
  expect_error("hist:keys=node if bytes_req ~ \"^a*\"", ErrorCode::FilterExpectDigit);
  expect_error("hist:keys=node if bytes_req ~ 1^0", ErrorCode::FilterIllegalFieldOp);
  expect_error("hist:keys=node:clock=^bogus", ErrorCode::SetClockFail);
  expect_error("hist:keys=node:clock=^counter", ErrorCode::SetClockFail);
}

TEST(Plan, DescribeNamesEveryField) {
  const std::string d = describe(plan_ok("hist:keys=call_site.hex:vals=bytes_req if node == 0"));
  EXPECT_NE(d.find("key 0: call_site.hex <- record offset 8 size 8 unsigned"), std::string::npos) << d;
  EXPECT_NE(d.find("val 1: bytes_req <- record offset 24 size 8 unsigned"), std::string::npos) << d;
  EXPECT_NE(d.find("filter: node == 0"), std::string::npos) << d;
}

}  // namespace
}  // namespace histd::plan
