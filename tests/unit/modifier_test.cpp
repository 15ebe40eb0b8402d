// SPDX-License-Identifier: GPL-2.0-only
// The modifier table, row by row: each modifier parses under its names, is
// accepted where its row allows it and refused elsewhere with the kernel's
// error at the modifier, and prints back as written.
#include <gtest/gtest.h>

#include <string>

#include "histd/modifier.h"
#include "histd/pipeline.h"
#include "histd/synth.h"
#include "test_support.h"

namespace histd::modifier {
namespace {

using histd::testing::kmalloc;

// A field of kmem:kmalloc that `needs` admits.
std::string field_for(Needs needs) {
  switch (needs) {
    case Needs::Number:
      return "bytes_req";
    case Needs::CommonPid:
      return "common_pid";
    case Needs::Timestamp:
      return "common_timestamp";
    case Needs::Stack:  // kmalloc has none: StackFieldAsAKey
      return "";
  }
  return "";
}

// `cmd` is refused with `code`, the caret at `at`.
void expect_refused(const std::string& cmd, ErrorCode code, size_t at) {
  auto r = pipeline::plan_command(cmd, kmalloc());
  ASSERT_FALSE(r.ok()) << cmd;
  EXPECT_EQ(error_name(r.error().code), error_name(code)) << cmd;
  EXPECT_EQ(r.error().span.begin, at) << cmd;
}

// The plan of `cmd`; its printed trigger line plans to itself.
plan::HistPlan expect_planned(const std::string& cmd) {
  auto r = pipeline::plan_command(cmd, kmalloc());
  EXPECT_TRUE(r.ok()) << cmd << ": " << (r.ok() ? "" : r.error().message());
  if (!r.ok()) return {};
  auto again = pipeline::plan_command(r->plan.trigger_text(), kmalloc());
  EXPECT_TRUE(again.ok()) << r->plan.trigger_text();
  if (again.ok()) {
    EXPECT_EQ(again->plan.trigger_text(), r->plan.trigger_text());
  }
  return r->plan;
}

TEST(Modifier, RowsFollowTheEnum) {
  size_t i = 0;
  for (const ModifierInfo& m : modifiers()) {
    EXPECT_EQ(static_cast<size_t>(m.kind), i++);
    EXPECT_EQ(&info(m.kind), &m);
    EXPECT_EQ(parse::modifier_name(m.kind), m.name);
  }
  EXPECT_EQ(i, static_cast<size_t>(Modifier::Stacktrace) + 1);
}

TEST(Modifier, EveryRowParsesUnderItsNames) {
  for (const ModifierInfo& m : modifiers()) {
    const std::string text = printed(m.kind, 8);
    EXPECT_EQ(text, m.takes_number ? std::string(m.name) + "=8" : std::string(m.name));
    const Written w = find(text);
    ASSERT_EQ(w.info, &m) << text;
    EXPECT_EQ(w.number, m.takes_number ? 8u : 0u);
    const parse::HistCommand c = histd::testing::parse_ok("hist:keys=a." + text);
    ASSERT_EQ(c.keys.size(), 1u);
    ASSERT_EQ(c.keys[0].modifiers.size(), 1u);
    EXPECT_EQ(c.keys[0].modifiers[0].kind, m.kind);
    EXPECT_EQ(c.keys[0].modifiers[0].buckets, w.number);
    if (!m.alias.empty()) {
      EXPECT_EQ(find(std::string(m.alias) + "=8").info, &m);
    }
  }
  EXPECT_EQ(find("bucket=0x10").number, 16u);
  for (const char* bad : {"buckets", "bucket", "buckets=0", "buckets=x", "buckets=", "Hex", "sym_offset", ""})
    EXPECT_EQ(find(bad).info, nullptr) << bad;
}

TEST(Modifier, EveryRowAsAKey) {
  for (const ModifierInfo& m : modifiers()) {
    if (m.needs == Needs::Stack) continue;
    const std::string text = printed(m.kind, 8);
    const std::string field = field_for(m.needs);
    const std::string cmd = "hist:keys=" + field + "." + text;
    const size_t at = cmd.size() - text.size();
    switch (m.key) {
      case Use::Allowed: {
        const plan::HistPlan p = expect_planned(cmd);
        ASSERT_EQ(p.keys.size(), 1u) << cmd;
        EXPECT_EQ(p.keys[0].display, m.key_display) << cmd;
        EXPECT_EQ(p.keys[0].transform, m.transform) << cmd;
        EXPECT_EQ(p.keys[0].printed, field + "." + text);
        EXPECT_EQ(p.trigger_text().rfind("hist:keys=" + field + "." + text + ":", 0), 0u) << p.trigger_text();
        if (m.needs != Needs::Number) {
          // Any other field: the kernel's "Invalid field modifier" at the modifier.
          expect_refused("hist:keys=bytes_req." + text, ErrorCode::BadFieldModifier, 20);
        }
        break;
      }
      case Use::Refused:
        expect_refused(cmd, ErrorCode::BadFieldModifier, at);
        break;
      case Use::Unsupported:
        expect_refused(cmd, ErrorCode::Unsupported, at);
        break;
    }
  }
}

// histogram.rst's own example: a synthetic event's stack field as a key,
// shown as its frames ("stack.stacktrace"); any other field is refused at
// the modifier, and a stack without it is an array.
TEST(Modifier, StackFieldAsAKey) {
  auto def = synth::parse_synth_command("block_lat pid_t pid; u64 delta; unsigned long[] stack;");
  ASSERT_TRUE(def.ok());
  const catalog::EventFormat block_lat = synth::format_of(def->definition, 2000);
  const std::string cmd = "hist:keys=delta.buckets=100,stack.stacktrace:sort=delta";
  auto r = pipeline::plan_command(cmd, block_lat);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->plan.keys.size(), 2u);
  EXPECT_EQ(r->plan.keys[1].display, table::KeyDisplay::Stacktrace);
  EXPECT_EQ(r->plan.keys[1].name, "stack.stacktrace");
  EXPECT_EQ(r->plan.keys[1].printed, "stack.stacktrace");
  EXPECT_EQ(r->plan.trigger_text().rfind("hist:keys=delta.buckets=100,stack.stacktrace:vals=hitcount:sort=delta", 0),
            0u)
      << r->plan.trigger_text();
  EXPECT_EQ(r->plan.columns().keys[1].address, table::AddressKind::Pointer) << "frames are kernel addresses";
  auto bad = pipeline::plan_command("hist:keys=delta.stacktrace", block_lat);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(error_name(bad.error().code), error_name(ErrorCode::BadFieldModifier));
  EXPECT_EQ(bad.error().span.begin, 16u);
  auto bare = pipeline::plan_command("hist:keys=stack", block_lat);
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(error_name(bare.error().code), error_name(ErrorCode::Unsupported));
}

TEST(Modifier, EveryRowAsAValue) {
  for (const ModifierInfo& m : modifiers()) {
    const std::string text = printed(m.kind, 8);
    const std::string field = m.needs == Needs::Stack ? "bytes_req" : field_for(m.needs);
    const std::string cmd = "hist:keys=node:vals=" + field + "." + text;
    if (m.value != Use::Allowed) {
      expect_refused(cmd, ErrorCode::BadFieldModifier, cmd.size() - text.size());
      continue;
    }
    const plan::HistPlan p = expect_planned(cmd);
    ASSERT_EQ(p.vals.size(), 2u) << cmd;
    EXPECT_EQ(p.vals[1].display, m.val_display) << cmd;
    EXPECT_EQ(p.vals[1].usecs, m.transform == KeyTransform::Usecs) << cmd;
    EXPECT_NE(p.trigger_text().find(":vals=hitcount," + field + "." + text + ":"), std::string::npos)
        << p.trigger_text();
    if (m.needs != Needs::Number)
      expect_refused("hist:keys=node:vals=bytes_req." + text, ErrorCode::BadFieldModifier, 30);
  }
}

TEST(Modifier, EveryRowAsAnOperand) {
  for (const ModifierInfo& m : modifiers()) {
    const std::string text = printed(m.kind, 8);
    const Needs needs = m.operand_needs == Needs::Number ? m.needs : m.operand_needs;
    const std::string field = needs == Needs::Stack ? "bytes_req" : field_for(needs);
    const std::string cmd = "hist:keys=node:x=" + field + "." + text;
    if (m.operand != Use::Allowed) {
      // The caret is where the operand begins, as the kernel's errpos() puts it.
      expect_refused(cmd, ErrorCode::BadFieldModifier, 17);
      continue;
    }
    const plan::HistPlan p = expect_planned(cmd);
    ASSERT_EQ(p.vars.size(), 1u) << cmd;
    EXPECT_EQ(p.vars[0].expr.text, field + "." + text);
    EXPECT_EQ(p.vars[0].expr.usecs, m.transform == KeyTransform::Usecs) << cmd;
    if (m.operand_needs == Needs::Timestamp)
      expect_refused("hist:keys=node:x=bytes_req." + text, ErrorCode::BadFieldModifier, 17);
  }
}

// A stack is one display whether common_stacktrace or a field's
// .stacktrace: that display names no modifier.
TEST(Modifier, KeyDisplaysNameTheirModifier) {
  for (const ModifierInfo& m : modifiers())
    if (m.key == Use::Allowed && m.key_display != table::KeyDisplay::Decimal &&
        m.key_display != table::KeyDisplay::Stacktrace) {
      EXPECT_EQ(by_key_display(m.key_display), &m);
    }
  for (table::KeyDisplay d : {table::KeyDisplay::Decimal, table::KeyDisplay::String, table::KeyDisplay::Stacktrace})
    EXPECT_EQ(by_key_display(d), nullptr);
  EXPECT_TRUE(info(Modifier::Sym).key_is_address);
  EXPECT_TRUE(info(Modifier::SymOffset).key_is_address);
  EXPECT_FALSE(info(Modifier::Hex).key_is_address);
}

}  // namespace
}  // namespace histd::modifier
