// SPDX-License-Identifier: GPL-2.0-only
// pipeline::compile_event() is the one function that builds an event's
// program: explain's (pipeline::compile) is the unit the engine builds for
// the command as the event's only trigger, and event_unit() resolves what
// the engine reads from its state. No root needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "histd/codegen.h"
#include "histd/pipeline.h"
#include "test_support.h"

namespace histd::pipeline {
namespace {

using histd::testing::fixture_format;

constexpr const char* kCommand = "hist:keys=fd:vals=count if count > 10";

// A plan that generates the synthetic events named (event_unit() reads only
// the actions' targets).
plan::HistPlan generating(std::vector<std::string> synths) {
  plan::HistPlan p;
  for (std::string& s : synths) {
    plan::ActionPlan a;
    a.synth = std::move(s);
    p.actions.push_back(std::move(a));
  }
  return p;
}

TEST(Pipeline, CompileIsTheOneTriggerUnit) {
  auto format = fixture_format("syscalls", "sys_enter_write");
  ASSERT_TRUE(format);
  auto compiled = compile(kCommand, *format);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  EventParts parts;
  parts.own.hist = {{&compiled->plan, 0}};
  auto unit = event_unit(parts);
  ASSERT_TRUE(unit.ok());
  EXPECT_EQ(unit->entry.kind, codegen::EventEntry::Kind::Tracepoint);
  // An attached tracepoint's program, as the engine chains it.
  EXPECT_FALSE(unit->entry.chained);
  unit->entry.chained = true;
  EXPECT_EQ(compile_event(*unit).source, compiled->unit.source);
  codegen::EventEntry chained;
  chained.chained = true;
  EXPECT_EQ(compiled->unit.source,
            codegen::generate_event_unit({codegen::TriggerInput{&compiled->plan, 0}}, {}, {}, chained).source);
}

// explain --raw-syscalls shows what histd --raw-syscalls loads: the same
// handler, entered from the raw sys_enter / sys_exit tracepoint.
TEST(Pipeline, RawSyscallEntry) {
  auto enter = fixture_format("syscalls", "sys_enter_write");
  auto exit = fixture_format("syscalls", "sys_exit_write");
  ASSERT_TRUE(enter && exit);
  ASSERT_TRUE(enter->syscall && exit->syscall);
  EXPECT_EQ(syscall_entry(*enter, false), std::nullopt);
  EXPECT_EQ(syscall_entry(*enter, true), enter->syscall);

  auto classic = compile(kCommand, *enter);
  auto raw = compile(kCommand, *enter, {.raw_syscalls = true});
  ASSERT_TRUE(classic.ok() && raw.ok());
  EXPECT_NE(classic->unit.source.find("HISTD_EVENT_ENTRY(handle"), std::string::npos);
  EXPECT_EQ(raw->unit.source.find("HISTD_EVENT_ENTRY(handle"), std::string::npos);
  codegen::EventEntry entry{codegen::EventEntry::Kind::SyscallEnter, enter->syscall->args};
  entry.chained = true;
  EXPECT_EQ(raw->unit.source,
            codegen::generate_event_unit({codegen::TriggerInput{&raw->plan, 0}}, {}, {}, entry).source);
  EXPECT_NE(raw->unit.source.find("HISTD_SYSCALL_ENTER_ENTRY(handle"), std::string::npos);

  auto raw_exit = compile("hist:keys=ret", *exit, {.raw_syscalls = true});
  ASSERT_TRUE(raw_exit.ok()) << raw_exit.error().message();
  EXPECT_NE(raw_exit->unit.source.find("HISTD_SYSCALL_EXIT_ENTRY(handle"), std::string::npos);

  // An event the raw tracepoints cannot stand in for keeps its own entry.
  auto kmalloc = fixture_format("kmem", "kmalloc");
  ASSERT_TRUE(kmalloc);
  EXPECT_EQ(syscall_entry(*kmalloc, true), std::nullopt);
  auto k = compile("hist:keys=call_site", *kmalloc, {.raw_syscalls = true});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->unit.source, compile("hist:keys=call_site", *kmalloc)->unit.source);
}

// A chain: the event generates a, a's trigger generates b; c has no
// triggers (not inlined, but still a target); d has a trigger nothing
// generates. Inlined in name order, each one deeper than its generator.
TEST(Pipeline, EventUnitInlinesWhatTheTriggersGenerate) {
  synth::SynthDefinition def;
  def.name = "a";
  def.fields = {synth::SynthField{"u64", "lat", synth::SynthField::Kind::Integer, 8, false, 0, 8},
                synth::SynthField{"char[]", "s", synth::SynthField::Kind::DynamicString, 4, true, 0, 16}};
  const plan::HistPlan own = generating({"a", "c", ""}), on_a = generating({"b"}), on_b, on_d;
  EventParts parts;
  parts.own.hist = {{&own, 7}};
  parts.own.controls = {codegen::ControlInput{parse::ControlCommand::Kind::DisableHist, nullptr, 9, {7}}};
  SynthSink& a = parts.synths["a"];
  a.def = &def;
  a.id = 0xf001;
  a.control_slot = 11;
  a.trace_slot = 12;
  a.triggers.hist = {{&on_a, 13}};
  parts.synths["b"].triggers.hist = {{&on_b, 14}};
  parts.synths["b"].triggers.controls = {
      codegen::ControlInput{parse::ControlCommand::Kind::EnableHist, nullptr, 15, {13}}};
  parts.synths["c"].id = 0xf002;
  parts.synths["d"].triggers.hist = {{&on_d, 16}};
  auto unit = event_unit(parts);
  ASSERT_TRUE(unit.ok()) << unit.error().context;
  EXPECT_EQ(unit->numbered(), (std::vector<const plan::HistPlan*>{&own, &on_a, &on_b}));
  ASSERT_EQ(unit->triggers.size(), 1u);
  const codegen::TriggerInput& t = unit->triggers[0];
  EXPECT_EQ(t.control_slot, 7u);
  EXPECT_EQ(t.depth, 0u);
  ASSERT_EQ(t.synths.size(), 3u);
  EXPECT_EQ(t.synths[0].id, 0xf001u);
  EXPECT_EQ(t.synths[0].control_slot, 11u);
  EXPECT_EQ(t.synths[0].trace_slot, 12u);
  EXPECT_EQ(t.synths[0].fixed_size, def.fixed_size());
  EXPECT_EQ(t.synths[0].record_size, def.fixed_size() + 256);
  EXPECT_EQ(t.synths[0].inlined, 0);
  EXPECT_EQ(t.synths[1].id, 0u);  // c: no definition given, so an empty target
  EXPECT_EQ(t.synths[1].inlined, -1);
  EXPECT_EQ(t.synths[2].inlined, -1);
  ASSERT_EQ(unit->controls.size(), 1u);
  EXPECT_EQ(unit->controls[0].control_slot, 9u);
  ASSERT_EQ(unit->inlined.size(), 2u);
  EXPECT_EQ(unit->inlined[0].triggers.at(0).control_slot, 13u);
  EXPECT_EQ(unit->inlined[0].triggers.at(0).depth, 1u);
  EXPECT_EQ(unit->inlined[0].triggers.at(0).synths.at(0).inlined, 1);
  EXPECT_EQ(unit->inlined[1].triggers.at(0).control_slot, 14u);
  EXPECT_EQ(unit->inlined[1].triggers.at(0).depth, 2u);
  ASSERT_EQ(unit->inlined[1].controls.size(), 1u);
  EXPECT_EQ(unit->inlined[1].controls[0].target_slots, std::vector<uint32_t>{13});
}

// Each level has its own buffers on the BPF side (HISTD_MAX_DEPTH 4): a
// chain of three synthetic events fits, a fourth is refused.
TEST(Pipeline, EventUnitRefusesTooDeepAChain) {
  const plan::HistPlan own = generating({"s1"}), p1 = generating({"s2"}), p2 = generating({"s3"}),
                       p3 = generating({"s4"}), p4;
  EventParts parts;
  parts.own.hist = {{&own, 0}};
  parts.synths["s1"].triggers.hist = {{&p1, 1}};
  parts.synths["s2"].triggers.hist = {{&p2, 2}};
  parts.synths["s3"].triggers.hist = {{&p3, 3}};
  auto fits = event_unit(parts);
  ASSERT_TRUE(fits.ok()) << fits.error().context;
  EXPECT_EQ(fits->inlined.size(), 3u);
  parts.synths["s4"].triggers.hist = {{&p4, 4}};
  auto deep = event_unit(parts);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().err, E2BIG);
  EXPECT_EQ(deep.error().context, "synthetic event s4 is generated more than 3 events deep");
}

TEST(Pipeline, ARecordedEventCopiesItsFixedPartAndItsStrings) {
  // sched_process_exec: a __data_loc filename after three fixed fields.
  const auto exec = fixture_format("sched", "sched_process_exec");
  const codegen::RecordInput r = record_input(*exec);
  EXPECT_EQ(r.id, exec->id);
  EXPECT_EQ(r.fixed_size, exec->record_size());
  ASSERT_EQ(r.dynamic.size(), 1u);
  EXPECT_EQ(r.dynamic[0].offset, exec->find("filename")->offset);
  EXPECT_FALSE(r.dynamic[0].relative);
  EXPECT_TRUE(record_input(*fixture_format("kmem", "kmalloc")).dynamic.empty());

  // The unit records before its triggers, and with none at all.
  EventParts parts;
  parts.record = r;
  auto unit = event_unit(parts);
  ASSERT_TRUE(unit.ok());
  const std::string src = compile_event(*unit).source;
  EXPECT_NE(src.find("histd_recbuf SEC(\".maps\")"), std::string::npos);
  EXPECT_NE(src.find("record_event(ctx, rec, c);"), std::string::npos);
  EXPECT_NE(src.find("HISTD_EVENT_ENTRY(handle, 1, 1)"), std::string::npos) << "a record carries its task and time";
  // A unit that does not record pays nothing for it.
  parts.record.reset();
  EXPECT_EQ(compile_event(*event_unit(parts)).source.find("histd_recbuf"), std::string::npos);
}

// set_event_pid: the tasks the kernel's sched_switch and wakeup probes ask
// decide their events; the current task decides every other one.
TEST(Pipeline, SetEventPidAsksTheTasksTheKernelAsks) {
  const auto sw = fixture_format("sched", "sched_switch");
  const codegen::PidCheck switch_check = pid_check(*sw);
  EXPECT_FALSE(switch_check.current);
  EXPECT_EQ(switch_check.pid_fields,
            (std::vector<uint32_t>{sw->find("prev_pid")->offset, sw->find("next_pid")->offset}));
  for (const char* wakeup : {"sched_waking", "sched_wakeup"}) {
    const auto f = fixture_format("sched", wakeup);
    const codegen::PidCheck check = pid_check(*f);
    EXPECT_TRUE(check.current) << wakeup;
    EXPECT_EQ(check.pid_fields, (std::vector<uint32_t>{f->find("pid")->offset})) << wakeup;
  }
  // sched_process_fork names tasks too, but the kernel asks the current one.
  EXPECT_EQ(pid_check(*fixture_format("kmem", "kmalloc")), codegen::PidCheck{});
  EXPECT_EQ(pid_check(*fixture_format("sched", "sched_process_fork")), codegen::PidCheck{});

  // explain shows the check histd loads: every entry but the test entry asks.
  auto compiled = compile("hist:keys=next_pid", *sw);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  const std::string& src = compiled->unit.source;
  const std::string asks_next =
      "if (histd_pid_listed((__u32)HISTD_LOAD_S32(rec, " + std::to_string(sw->find("next_pid")->offset) + "u)))";
  EXPECT_NE(src.find(asks_next), std::string::npos) << src;
  EXPECT_EQ(src.find("bpf_get_current_pid_tgid()))"), std::string::npos) << src;
  auto write = compile(kCommand, *fixture_format("syscalls", "sys_enter_write"));
  ASSERT_TRUE(write.ok());
  EXPECT_NE(write->unit.source.find("if (histd_pid_listed((__u32)bpf_get_current_pid_tgid()))"), std::string::npos);
}

}  // namespace
}  // namespace histd::pipeline
