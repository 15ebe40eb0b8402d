// SPDX-License-Identifier: GPL-2.0-only
// Parser: variables, expressions and actions (seeds/003 section 2.2), the
// trees they give and the kernel's carets for what is malformed.
#include <gtest/gtest.h>

#include "histd/parse.h"
#include "test_support.h"

namespace histd::parse {
namespace {

using histd::testing::parse_ok;
void expect_error(const std::string& marked, ErrorCode code) { histd::testing::expect_parse_error(marked, code); }

// The tree printed in prefix form, to compare whole shapes at once.
std::string shape(const Expr& e, int i) {
  const ExprNode& n = e.at(i);
  switch (n.kind) {
    case ExprNode::Kind::Field: {
      std::string s = n.field.name;
      for (const auto& m : n.field.modifiers) s += "." + std::string(modifier_name(m.kind));
      return s;
    }
    case ExprNode::Kind::VarRef:
      return (n.system.empty() ? "" : n.system + "." + n.event + ".") + "$" + n.var;
    case ExprNode::Kind::Constant:
      return std::to_string(n.constant);
    case ExprNode::Kind::Negate:
      return "(neg " + shape(e, n.lhs) + ")";
    case ExprNode::Kind::Add:
      return "(+ " + shape(e, n.lhs) + " " + shape(e, n.rhs) + ")";
    case ExprNode::Kind::Sub:
      return "(- " + shape(e, n.lhs) + " " + shape(e, n.rhs) + ")";
    case ExprNode::Kind::Mul:
      return "(* " + shape(e, n.lhs) + " " + shape(e, n.rhs) + ")";
    case ExprNode::Kind::Div:
      return "(/ " + shape(e, n.lhs) + " " + shape(e, n.rhs) + ")";
  }
  return "?";
}

std::string var_shape(const std::string& text) {
  HistCommand c = parse_ok("hist:keys=pid:x=" + text);
  if (c.vars.size() != 1) return "<no var>";
  const Expr& e = c.exprs.at(static_cast<size_t>(c.vars[0].expr));
  return shape(e, e.root);
}

TEST(InterEventParse, SeedWakeupLatencyCommands) {
  HistCommand c = parse_ok("hist:keys=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"");
  ASSERT_EQ(c.vars.size(), 1u);
  EXPECT_EQ(c.vars[0].name, "ts0");
  EXPECT_EQ(c.vars[0].name_span, (Span{14, 17}));
  EXPECT_EQ(var_shape("common_timestamp.usecs"), "common_timestamp.usecs");
  ASSERT_TRUE(c.filter.has_value());

  c = parse_ok(
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid) if next_comm==\"cyclictest\"");
  ASSERT_EQ(c.vars.size(), 1u);
  const Expr& e = c.exprs.at(static_cast<size_t>(c.vars[0].expr));
  EXPECT_EQ(shape(e, e.root), "(- common_timestamp.usecs $ts0)");
  EXPECT_EQ(e.at(e.root).text, "common_timestamp.usecs-$ts0");
  ASSERT_EQ(c.actions.size(), 1u);
  const Action& a = c.actions[0];
  EXPECT_EQ(a.handler, Action::Handler::OnMatch);
  EXPECT_EQ(a.kind, Action::Kind::Trace);
  EXPECT_EQ(a.match_system, "sched");
  EXPECT_EQ(a.match_event, "sched_waking");
  EXPECT_EQ(a.synth, "wakeup_latency");
  EXPECT_FALSE(a.trace_keyword);
  ASSERT_EQ(a.params.size(), 2u);
  EXPECT_EQ(a.params[0].text, "$wakeup_lat");
  EXPECT_EQ(a.params[1].text, "next_pid");
  EXPECT_EQ(c.command.substr(a.params[1].span.begin, a.params[1].span.end - a.params[1].span.begin), "next_pid");
}

TEST(InterEventParse, TraceKeywordAndOnmaxActions) {
  HistCommand c = parse_ok("hist:keys=pid:lat=$x:onmatch(sys.ev).trace(my_synth,$lat, pid)");
  ASSERT_EQ(c.actions.size(), 1u);
  EXPECT_TRUE(c.actions[0].trace_keyword);
  EXPECT_EQ(c.actions[0].synth, "my_synth");
  ASSERT_EQ(c.actions[0].params.size(), 2u);
  EXPECT_EQ(c.actions[0].params[1].text, "pid");  // trimmed

  c = parse_ok(
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
      "onmax($wakeup_lat).save(next_comm,prev_pid,prev_prio,prev_comm)");
  ASSERT_EQ(c.actions.size(), 1u);
  EXPECT_EQ(c.actions[0].handler, Action::Handler::OnMax);
  EXPECT_EQ(c.actions[0].kind, Action::Kind::Save);
  EXPECT_EQ(c.actions[0].track_var, "$wakeup_lat");
  EXPECT_EQ(c.actions[0].params.size(), 4u);

  c = parse_ok("hist:keys=pid:x=y:onchange($x).snapshot():onmax($x).save(comm)");
  ASSERT_EQ(c.actions.size(), 2u);
  EXPECT_EQ(c.actions[0].handler, Action::Handler::OnChange);
  EXPECT_EQ(c.actions[0].kind, Action::Kind::Snapshot);
  EXPECT_TRUE(c.actions[0].params.empty());
}

TEST(InterEventParse, SeveralVariablesPerTokenAndTokens) {
  HistCommand c = parse_ok("hist:keys=pid:a=x,b=y+1:c=$a*2:vals=hitcount");
  ASSERT_EQ(c.vars.size(), 3u);
  EXPECT_EQ(c.vars[0].name, "a");
  EXPECT_EQ(c.vars[1].name, "b");
  EXPECT_EQ(c.vars[2].name, "c");
  EXPECT_EQ(var_shape("$a*2"), "(* $a 2)");
}

TEST(InterEventParse, PrecedenceAndLeftAssociativity) {
  EXPECT_EQ(var_shape("a+b*c"), "(+ a (* b c))");
  EXPECT_EQ(var_shape("a*b+c"), "(+ (* a b) c)");
  EXPECT_EQ(var_shape("16-8-4"), "(- (- 16 8) 4)");
  EXPECT_EQ(var_shape("a/b/c"), "(/ (/ a b) c)");
  EXPECT_EQ(var_shape("a-b+c"), "(+ (- a b) c)");
  EXPECT_EQ(var_shape("0x10*$v"), "(* 16 $v)");
  EXPECT_EQ(var_shape("-(a+b)"), "(neg (+ a b))");
  EXPECT_EQ(var_shape("sched.sched_waking.$ts0"), "sched.sched_waking.$ts0");
  EXPECT_EQ(var_shape("common_timestamp.usecs-sched.sched_waking.$ts0"),
            "(- common_timestamp.usecs sched.sched_waking.$ts0)");
  // sym-offset's '-' is part of the modifier, not an operator
  EXPECT_EQ(var_shape("call_site.sym-offset"), "call_site.sym-offset");
}

TEST(InterEventParse, ExpressionsAsKeysAndValues) {
  HistCommand c = parse_ok("hist:keys=pid:vals=hitcount,$lat,common_timestamp-$ts0");
  ASSERT_EQ(c.vals.size(), 3u);
  EXPECT_EQ(c.vals[0].name, "hitcount");
  EXPECT_TRUE(c.vals[1].name.empty());
  EXPECT_GE(c.vals[1].expr, 0);
  EXPECT_GE(c.vals[2].expr, 0);
  const Expr& e = c.exprs.at(static_cast<size_t>(c.vals[2].expr));
  EXPECT_EQ(shape(e, e.root), "(- common_timestamp $ts0)");
}

TEST(InterEventParse, Errors) {
  // more than three levels of sub-expressions
  expect_error("hist:keys=pid:x=^a+b+c+d+e", ErrorCode::TooManySubexpr);
  expect_error("hist:keys=pid:x=-(^a", ErrorCode::NoClosingParen);
  expect_error("hist:keys=pid:x=^1234567890123456789012", ErrorCode::ExpectNumber);
  expect_error("hist:keys=pid:x=^$9a", ErrorCode::VarNotFound);
  expect_error("hist:keys=pid:^=x", ErrorCode::MalformedAssignment);
  expect_error("hist:keys=pid:^9x=y", ErrorCode::MalformedAssignment);
  // an unknown action name is a synthetic event to generate; its one-letter
  // parameter is refused with the caret on the first "a" of the command
  expect_error("hist:keys=pid:onm^ax($x).frob(a)", ErrorCode::InvalidParam);
  expect_error("^hist:keys=pid:onmax($x).save()", ErrorCode::NoSaveParams);
  expect_error("hist:keys=pid:onmatch(^sched).foo(ab)", ErrorCode::SubsysNotFound);
  expect_error("hist:keys=pid:onmatch(^sched.x", ErrorCode::NoClosingParen);
  expect_error("^hist:keys=pid:onmatch(sched.x.foo(ab)", ErrorCode::ActionNotFound);
}

TEST(InterEventParse, VariableLimits) {
  std::string cmd = "hist:keys=pid:";
  for (int i = 0; i < 16; ++i) cmd += (i ? "," : "") + std::string("v") + std::to_string(i) + "=x";
  parse_ok(cmd);
  auto r = parse_trigger(cmd + ",v16=x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::TooManyVars);
}

TEST(InterEventParse, ErrposFindsTheFirstCopy) {
  EXPECT_EQ(errpos("hist:keys=a:x=a", "a"), 10u);
  EXPECT_EQ(errpos("hist:keys=a", "zzz"), 0u);
}

}  // namespace
}  // namespace histd::parse
