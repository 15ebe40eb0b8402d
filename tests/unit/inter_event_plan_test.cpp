// SPDX-License-Identifier: GPL-2.0-only
// Planner: variables, expressions, references and actions as data, the
// trigger line the kernel prints for them, and the errors with carets.
#include <gtest/gtest.h>

#include "histd/parse.h"
#include "histd/plan.h"
#include "histd/synth.h"
#include "test_support.h"

namespace histd::plan {
namespace {

using histd::testing::field;

std::vector<catalog::Field> common() {
  return {field("common_type", "unsigned short", 0, 2, false), field("common_flags", "unsigned char", 2, 1, false),
          field("common_preempt_count", "unsigned char", 3, 1, false), field("common_pid", "int", 4, 4, true)};
}

catalog::EventFormat sched_waking() {
  catalog::EventFormat f;
  f.system = "sched";
  f.name = "sched_waking";
  f.id = 300;
  f.fields = common();
  f.fields.push_back(field("comm", "char[16]", 8, 16, false, catalog::FieldKind::CharArray, 16));
  f.fields.push_back(field("pid", "pid_t", 24, 4, true));
  f.fields.push_back(field("prio", "int", 28, 4, true));
  f.fields.push_back(field("target_cpu", "int", 32, 4, true));
  return f;
}

catalog::EventFormat sched_switch() {
  catalog::EventFormat f;
  f.system = "sched";
  f.name = "sched_switch";
  f.id = 301;
  f.fields = common();
  f.fields.push_back(field("prev_comm", "char[16]", 8, 16, false, catalog::FieldKind::CharArray, 16));
  f.fields.push_back(field("prev_pid", "pid_t", 24, 4, true));
  f.fields.push_back(field("prev_prio", "int", 28, 4, true));
  f.fields.push_back(field("prev_state", "long", 32, 8, true));
  f.fields.push_back(field("next_comm", "char[16]", 40, 16, false, catalog::FieldKind::CharArray, 16));
  f.fields.push_back(field("next_pid", "pid_t", 56, 4, true));
  f.fields.push_back(field("next_prio", "int", 60, 4, true));
  return f;
}

Result<HistPlan, Diagnostic> plan(const std::string& text, const catalog::EventFormat& format,
                                  const PlanContext& registry = {}) {
  auto cmd = parse::parse_hist(text);
  if (!cmd) return unexpected(std::move(cmd).error());
  return plan_hist(*cmd, format, registry);
}

HistPlan plan_ok(const std::string& text, const catalog::EventFormat& format, const PlanContext& registry = {}) {
  auto r = plan(text, format, registry);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : HistPlan{};
}

void expect_error(std::string marked, ErrorCode code, const catalog::EventFormat& format,
                  const PlanContext& registry = {}) {
  const size_t caret = marked.find('^');
  ASSERT_NE(caret, std::string::npos) << marked;
  std::string text = marked;
  text.erase(caret, 1);
  auto r = plan(text, format, registry);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(error_name(r.error().code), error_name(code)) << text << ": " << r.error().message();
  EXPECT_EQ(r.error().span.begin, caret) << text;
}

// What the engine registers for the seed's sched_waking trigger.
PlanContext waking_registry(const HistPlan& owner) {
  PlanContext reg;
  for (const Variable& v : owner.vars) {
    RegisteredVar rv;
    rv.system = owner.system;
    rv.event = owner.event;
    rv.name = v.name;
    rv.owner = 7;
    rv.slot = v.slot;
    rv.key_size = owner.key_size;
    rv.record_size = owner.var_record_size;
    rv.type = v.expr;
    rv.type.ops.clear();
    reg.vars.push_back(rv);
  }
  synth::SynthDefinition def;
  def.name = "wakeup_latency";
  synth::SynthField lat;
  lat.type = "u64";
  lat.name = "lat";
  lat.offset = 8;
  synth::SynthField pid;
  pid.type = "pid_t";
  pid.name = "pid";
  pid.size = 4;
  pid.is_signed = true;
  pid.offset = 16;
  def.fields = {lat, pid};
  reg.synths.push_back(def);
  return reg;
}

TEST(InterEventPlan, ConstantExpressionsFoldAsTheKernel) {
  EXPECT_EQ(plan_ok("hist:keys=pid:x=16-8-4-2", sched_waking()).trigger_text(),
            "hist:keys=pid:vals=hitcount:x=2:sort=hitcount:size=2048");
  EXPECT_EQ(plan_ok("hist:keys=pid:x=2*3+4", sched_waking()).vars[0].expr.text, "10");
  // the kernel divides by a constant with a multiply and shift whose result
  // can be one too large; histd reproduces it
  EXPECT_EQ(div_strategy(3), DivStrategy::MultShift);
  EXPECT_EQ(divide(10, 3, div_strategy(3)), 4u);
  EXPECT_EQ(divide(16, 4, div_strategy(4)), 4u);
  EXPECT_EQ(div_strategy(4), DivStrategy::Shift);
  EXPECT_EQ(divide(7, 0, DivStrategy::Runtime), ~uint64_t{0});
}

TEST(InterEventPlan, SeedWakeupLatencyChain) {
  HistPlan waking = plan_ok("hist:keys=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"", sched_waking());
  EXPECT_EQ(waking.trigger_text(),
            "hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=global"
            " if comm==\"cyclictest\"");
  ASSERT_EQ(waking.vars.size(), 1u);
  EXPECT_TRUE(waking.vars[0].expr.usecs);
  EXPECT_TRUE(waking.has_var_map());

  const PlanContext reg = waking_registry(waking);
  HistPlan sw = plan_ok(
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid) if next_comm==\"cyclictest\"",
      sched_switch(), reg);
  ASSERT_EQ(sw.refs.size(), 2u);  // $ts0, and the param $wakeup_lat read back
  EXPECT_EQ(sw.refs[0].name, "ts0");
  EXPECT_TRUE(sw.refs[1].self);
  EXPECT_EQ(sw.refs[0].owner, 7u);
  EXPECT_TRUE(sw.refs[0].read_once);
  ASSERT_EQ(sw.actions.size(), 1u);
  EXPECT_EQ(sw.actions[0].synth, "wakeup_latency");
  ASSERT_EQ(sw.actions[0].params.size(), 2u);
  EXPECT_EQ(sw.actions[0].params[1].target.name, "pid");
  EXPECT_EQ(
      sw.trigger_text(),
      "hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:size=2048:"
      "clock=global:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid) if next_comm==\"cyclictest\"");
}

TEST(InterEventPlan, OnmaxSaveKeepsFieldsBesideTheMaximum) {
  HistPlan waking = plan_ok("hist:keys=pid:ts0=common_timestamp.usecs", sched_waking());
  HistPlan sw = plan_ok(
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmax($wakeup_lat).save(next_comm,prev_pid,prev_prio,prev_comm)",
      sched_switch(), waking_registry(waking));
  ASSERT_EQ(sw.actions.size(), 1u);
  EXPECT_EQ(sw.actions[0].handler, parse::Action::Handler::OnMax);
  ASSERT_EQ(sw.actions[0].saves.size(), 4u);
  EXPECT_TRUE(sw.actions[0].saves[0].is_string);
  EXPECT_FALSE(sw.actions[0].saves[1].is_string);
  EXPECT_GT(sw.var_record_size, sw.actions[0].saves[3].offset);
  EXPECT_EQ(sw.actions[0].printed, "onmax($wakeup_lat).save(next_comm,prev_pid,prev_prio,prev_comm)");
}

TEST(InterEventPlan, Errors) {
  HistPlan waking = plan_ok("hist:keys=pid:ts0=common_timestamp.usecs", sched_waking());
  const PlanContext reg = waking_registry(waking);
  const catalog::EventFormat sw = sched_switch();
  expect_error("hist:keys=next_pid:x=^$nope", ErrorCode::VarNotFound, sw, reg);
  expect_error("hist:keys=next_pid:x=next_prio/^0", ErrorCode::DivisionByZero, sw, reg);
  expect_error("^hist:keys=next_pid:x=common_timestamp-$ts0", ErrorCode::TimestampMismatch, sw, reg);
  expect_error("hist:keys=next_pid:x=^next_comm+1", ErrorCode::InvalidStrOperand, sw, reg);
  // errpos() quirk: the caret is on the first "x" of the command
  expect_error("hist:keys=ne^xt_pid:x=next_prio,x=1", ErrorCode::DuplicateVar, sw, reg);
  expect_error("hist:keys=next_pid:x=$ts0:onmatch(sched.sched_waking).^nosuch($x)", ErrorCode::SynthEventNotFound, sw,
               reg);
  expect_error("hist:keys=next_pid:x=$ts0:onmatch(sched.sched_waking).^wakeup_latency($x)",
               ErrorCode::SynthCountMismatch, sw, reg);
  expect_error("hist:keys=next_pid:x=$ts0:onmatch(sched.sched_waking).wakeup_latency($x,^next_comm)",
               ErrorCode::SynthTypeMismatch, sw, reg);
  expect_error("hist:keys=ne^xt_pid:x=$ts0:onmax(x).save(prev_pid)", ErrorCode::OnxNotVar, sw, reg);
  expect_error("hist:keys=next_pid:x=$ts0:onmax(^$y).save(prev_pid)", ErrorCode::OnxVarNotFound, sw, reg);
  expect_error("hist:keys=next_pid:x=$ts0:onmatch(sched.sched_waking).^save(prev_pid)", ErrorCode::ActionMismatch, sw,
               reg);
  expect_error("hist:keys=^$ts0", ErrorCode::InvalidRefKey, sw, reg);
}

TEST(InterEventPlan, AmbiguousVariableNeedsQualifying) {
  HistPlan waking = plan_ok("hist:keys=pid:ts0=common_timestamp.usecs", sched_waking());
  PlanContext reg = waking_registry(waking);
  RegisteredVar other = reg.vars[0];
  other.event = "sched_wakeup";
  other.owner = 8;
  reg.vars.push_back(other);
  expect_error("hist:keys=next_pid:x=common_timestamp.usecs-^$ts0", ErrorCode::VarNotUnique, sched_switch(), reg);
  HistPlan ok = plan_ok("hist:keys=next_pid:x=common_timestamp.usecs-sched.sched_wakeup.$ts0", sched_switch(), reg);
  ASSERT_EQ(ok.refs.size(), 1u);
  EXPECT_EQ(ok.refs[0].owner, 8u);
}

}  // namespace
}  // namespace histd::plan
