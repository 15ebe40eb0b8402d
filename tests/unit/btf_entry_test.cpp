// SPDX-License-Identifier: GPL-2.0-only
// pipeline::btf_entry(): the scheduler's events histd enters BTF-typed, each
// field of the record built from the tracepoint's arguments at the offset
// the format gives; a format that differs from the table's row in any field
// (another kernel's) keeps the classic entry. No root needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "histd/catalog.h"
#include "histd/codegen.h"
#include "histd/parse.h"
#include "histd/pipeline.h"
#include "histd/plan.h"

namespace histd::pipeline {
namespace {

using histd::testing::fixture_format;

// The format's text with `from` replaced by `to`, parsed again.
catalog::EventFormat edited(const catalog::EventFormat& f, const std::string& from, const std::string& to) {
  std::string text = f.text;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  auto parsed = catalog::parse_format(text, f.system);
  EXPECT_TRUE(parsed.ok());
  catalog::EventFormat out = parsed.ok() ? std::move(parsed).value() : f;
  out.source = catalog::event_source(out);
  return out;
}

TEST(BtfEntry, SchedSwitchBuildsEveryFieldWhereTheFormatSays) {
  const auto sw = fixture_format("sched", "sched_switch");
  ASSERT_TRUE(sw);
  const auto entry = btf_entry(*sw, true);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->target, "sched_switch");
  ASSERT_EQ(entry->stores.size(), 7u);
  const std::vector<std::string> names = {"prev_comm", "prev_pid", "prev_prio", "prev_state",
                                          "next_comm", "next_pid", "next_prio"};
  for (size_t i = 0; i < names.size(); ++i) {
    const catalog::Field* f = sw->find(names[i]);
    ASSERT_NE(f, nullptr) << names[i];
    EXPECT_EQ(entry->stores[i].offset, f->offset) << names[i];
    EXPECT_EQ(entry->stores[i].size, f->size) << names[i];
    EXPECT_EQ(entry->stores[i].comm, names[i].ends_with("comm")) << names[i];
  }
  // prev is argument 1, next argument 2; the state is computed as the kernel does.
  EXPECT_EQ(entry->stores[0].value, "HISTD_BTF_TASK(ctx, 1)");
  EXPECT_EQ(entry->stores[3].value, "histd_btf_switch_state(ctx)");
  EXPECT_EQ(entry->stores[5].value, "HISTD_BTF_TASK(ctx, 2)->pid");
}

TEST(BtfEntry, WakeupsBuildTheWokenTasksRecord) {
  for (const char* name : {"sched_wakeup", "sched_waking"}) {
    const auto f = fixture_format("sched", name);
    ASSERT_TRUE(f) << name;
    const auto entry = btf_entry(*f, true);
    ASSERT_TRUE(entry) << name;
    EXPECT_EQ(entry->target, name);
    ASSERT_EQ(entry->stores.size(), 4u);
    EXPECT_TRUE(entry->stores[0].comm);
    EXPECT_EQ(entry->stores[0].offset, f->find("comm")->offset);
    EXPECT_EQ(entry->stores[1].value, "HISTD_BTF_TASK(ctx, 0)->pid");
    EXPECT_EQ(entry->stores[3].value, "HISTD_BTF_TASK(ctx, 0)->thread_info.cpu");
    EXPECT_EQ(entry->stores[3].offset, f->find("target_cpu")->offset);
  }
}

TEST(BtfEntry, OtherEventsAndTheOptionOffKeepTheClassicEntry) {
  EXPECT_FALSE(btf_entry(*fixture_format("sched", "sched_switch"), false));
  EXPECT_FALSE(btf_entry(*fixture_format("sched", "sched_process_fork"), true));
  EXPECT_FALSE(btf_entry(*fixture_format("kmem", "kmalloc"), true));
  EXPECT_FALSE(btf_entry(*fixture_format("syscalls", "sys_enter_write"), true));
}

TEST(BtfEntry, AFormatUnlikeTheRowKeepsTheClassicEntry) {
  const auto sw = fixture_format("sched", "sched_switch");
  // A field the row does not build.
  EXPECT_FALSE(btf_entry(edited(*sw, "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;",
                                "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
                                "\tfield:int next_cpu;\toffset:64;\tsize:4;\tsigned:1;"),
                         true));
  // One it builds missing, or of another size.
  EXPECT_FALSE(btf_entry(edited(*sw, "field:int prev_prio;", "field:int prev_nice;"), true));
  EXPECT_FALSE(btf_entry(
      edited(*sw, "field:long prev_state;\toffset:32;\tsize:8;", "field:int prev_state;\toffset:32;\tsize:4;"), true));
  // Task states other than those histd_btf_switch_state() computes with.
  EXPECT_FALSE(btf_entry(edited(*sw, "{ 0x00000080, \"I\" }", "{ 0x00000100, \"I\" }"), true));
  // The edit itself keeps a format histd would enter BTF-typed.
  EXPECT_TRUE(btf_entry(edited(*sw, "next_prio", "next_prio"), true));
}

// The stores the entry in `src` builds the record with, in the record's
// order: one line each.
std::vector<std::string> stores_in(const std::string& src) {
  std::vector<std::string> out;
  size_t at = src.find("HISTD_BTF_ENTRY_BEGIN");
  const size_t end = src.find("HISTD_BTF_ENTRY_END");
  if (at == std::string::npos || end == std::string::npos) return {"no BTF entry"};
  for (at = src.find('\n', at) + 1; src.find('\n', at) < end; at = src.find('\n', at) + 1)
    out.push_back(src.substr(at, src.find('\n', at) - at));
  return out;
}

// Only the fields something reads are built: a task's comm is a cache line
// of its own, cold on a switch. The pid check reads the pids it may decide by.
TEST(BtfEntry, TheEntryBuildsOnlyTheFieldsTheUnitReads) {
  const auto sw = fixture_format("sched", "sched_switch");
  const auto wakeup = fixture_format("sched", "sched_wakeup");
  ASSERT_TRUE(sw && wakeup);
  const std::string prev_pid = "  *(__u32 *)(rec + 24) = (__u32)(HISTD_BTF_TASK(ctx, 1)->pid);";
  const std::string next_pid = "  *(__u32 *)(rec + 56) = (__u32)(HISTD_BTF_TASK(ctx, 2)->pid);";
  const std::string prev_comm = "  histd_btf_comm(rec + 8, HISTD_BTF_TASK(ctx, 1));";
  const std::string next_comm = "  histd_btf_comm(rec + 40, HISTD_BTF_TASK(ctx, 2));";
  const std::string prev_prio = "  *(__u32 *)(rec + 28) = (__u32)(HISTD_BTF_TASK(ctx, 1)->prio);";
  const std::string state = "  *(__u64 *)(rec + 32) = (__u64)(histd_btf_switch_state(ctx));";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"hist:keys=next_pid", {prev_pid, next_pid}},
      {"hist:keys=common_pid", {prev_pid, next_pid}},
      {"hist:keys=next_comm", {prev_pid, next_comm, next_pid}},
      {"hist:keys=next_pid if prev_comm ~ \"k*\"", {prev_comm, prev_pid, next_pid}},
      {"hist:keys=next_pid:vals=prev_prio", {prev_pid, prev_prio, next_pid}},
      {"hist:keys=next_pid:s=prev_state", {prev_pid, state, next_pid}},
      {"hist:keys=next_pid:m=prev_prio:onmax($m).save(prev_comm)", {prev_comm, prev_pid, prev_prio, next_pid}},
  };
  for (const auto& [cmd, expected] : cases) {
    auto compiled = compile(cmd, *sw);
    ASSERT_TRUE(compiled.ok()) << cmd << ": " << compiled.error().message();
    EXPECT_EQ(stores_in(compiled->unit.source), expected) << cmd;
  }
  auto woken = compile("hist:keys=target_cpu", *wakeup);
  ASSERT_TRUE(woken.ok());
  EXPECT_EQ(stores_in(woken->unit.source),
            (std::vector<std::string>{"  *(__u32 *)(rec + 24) = (__u32)(HISTD_BTF_TASK(ctx, 0)->pid);",
                                      "  *(__u32 *)(rec + 32) = (__u32)(HISTD_BTF_TASK(ctx, 0)->thread_info.cpu);"}));
}

// An enabled event's record goes to the trace buffer whole: every field is built.
TEST(BtfEntry, ATracedRecordIsBuiltWhole) {
  const auto sw = fixture_format("sched", "sched_switch");
  ASSERT_TRUE(sw);
  auto planned = plan::plan_hist(*parse::parse_hist("hist:keys=next_pid"), *sw);
  ASSERT_TRUE(planned.ok());
  EventParts parts;
  parts.own.hist.push_back({&*planned, 0});
  parts.btf = btf_entry(*sw, true);
  parts.record = record_input(*sw);
  auto unit = event_unit(parts);
  ASSERT_TRUE(unit);
  unit->entry.pids = pid_check(*sw);
  EXPECT_EQ(stores_in(compile_event(*unit).source).size(), 7u);
  parts.record.reset();
  unit = event_unit(parts);
  ASSERT_TRUE(unit);
  unit->entry.pids = pid_check(*sw);
  EXPECT_EQ(stores_in(compile_event(*unit).source).size(), 2u);
}

TEST(BtfEntry, TheProgramBuildsTheRecordBeforeAnythingReadsIt) {
  const auto sw = fixture_format("sched", "sched_switch");
  auto compiled = compile("hist:keys=next_pid:vals=prev_state if prev_state == 1", *sw);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  const std::string& src = compiled->unit.source;
  const size_t sec = src.find("SEC(\"tp_btf/sched_switch\")");
  const size_t state = src.find("(histd_btf_switch_state(ctx))");
  const size_t end = src.find("HISTD_BTF_ENTRY_END(handle, 0, 0);");
  ASSERT_NE(sec, std::string::npos) << src;
  ASSERT_NE(state, std::string::npos) << src;
  ASSERT_NE(end, std::string::npos) << src;
  EXPECT_LT(sec, state);
  EXPECT_LT(state, end) << "the pid check and the triggers read the built record";
  EXPECT_EQ(src.find("HISTD_EVENT_ENTRY"), std::string::npos);
  // explain shows what histd --btf-tracepoints=false loads.
  auto classic = compile("hist:keys=next_pid", *sw, {.btf_tracepoints = false});
  ASSERT_TRUE(classic.ok());
  EXPECT_NE(classic->unit.source.find("HISTD_EVENT_ENTRY(handle, 0, 0)"), std::string::npos);
  EXPECT_EQ(classic->unit.source.find("tp_btf"), std::string::npos);
}

}  // namespace
}  // namespace histd::pipeline
