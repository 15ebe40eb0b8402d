// SPDX-License-Identifier: GPL-2.0-only
// Every accepted command survives being printed: the trigger line histd
// prints (the kernel's form, which is what the state file saves and what
// tracefs users and the kernel's selftests write back after '!') parses to
// the same trigger — the same line, the same identity, the same BPF program
// — and '!' + that line (up to the " [active]") names it for removal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "histd/catalog.h"
#include "histd/codegen.h"
#include "histd/parse.h"
#include "histd/pipeline.h"
#include "histd/plan.h"
#include "histd/synth.h"

namespace histd {
namespace {

using testing::command_corpus;
using testing::fixtures;

namespace fs = std::filesystem;

// What an engine holding these triggers would register for the next one.
struct World {
  plan::PlanContext registry;
  uint64_t next_owner = 1;
  World() { registry.catalog = &fixtures(); }
  void add(const plan::HistPlan& p) {
    const uint64_t owner = next_owner++;
    for (const plan::Variable& v : p.vars) registry.vars.push_back(plan::registered_var(p, v, owner));
  }
  void define(const std::string& synth_line) {
    auto d = synth::parse_synth_command(synth_line);
    ASSERT_TRUE(d.ok()) << synth_line;
    registry.synths.push_back(d->definition);
  }
};

std::string unit_of(const plan::HistPlan& p) {
  return codegen::generate_event_unit({codegen::TriggerInput{&p, 0}}).source;
}

// The property, for one command accepted on `format`. Returns its plan.
std::optional<plan::HistPlan> expect_round_trip(const std::string& command, const catalog::EventFormat& format,
                                                const plan::PlanContext& registry) {
  auto first = pipeline::plan_command(command, format, registry);
  if (!first) return std::nullopt;  // refused: nothing is saved
  const plan::HistPlan& p1 = first->plan;
  const std::string line = p1.trigger_text();
  auto second = pipeline::plan_command(line, format, registry, parse::kMaxPrintedCommandBytes);
  EXPECT_TRUE(second.ok()) << "accepted: " << command << "\nprinted:  " << line
                           << "\ndoes not parse back: " << (second.ok() ? "" : second.error().message());
  if (!second) return p1;
  EXPECT_EQ(second->plan.trigger_text(), line) << command;
  EXPECT_EQ(second->plan.identity(), p1.identity()) << command;
  EXPECT_EQ(unit_of(second->plan), unit_of(p1)) << command;
  // '!' + the listed line up to '[' (the selftests' clear_trigger keeps the
  // space before it) removes it.
  auto removal = pipeline::plan_command("!" + line + " ", format, registry, parse::kMaxPrintedCommandBytes);
  EXPECT_TRUE(removal.ok()) << line;
  if (removal) {
    EXPECT_TRUE(removal->plan.remove) << line;
    EXPECT_EQ(removal->plan.identity(), p1.identity()) << line;
  }
  return p1;
}

TEST(RoundTrip, EveryCorpusCommandOnEveryFixtureEvent) {
  const auto commands = testing::command_corpus("trigger");
  ASSERT_GT(commands.size(), 40u);
  size_t accepted = 0;
  for (const catalog::EventId& id : fixtures().events()) {
    auto format = testing::fixture_format(id.system, id.name);
    if (!format) continue;
    for (const std::string& c : commands) accepted += expect_round_trip(c, *format, {}).has_value();
  }
  // The corpus is the seed documents' commands: most apply somewhere.
  EXPECT_GT(accepted, 40u);
}

TEST(RoundTrip, ModifiersFiltersAndAttributes) {
  auto kmalloc = testing::fixture_format("kmem", "kmalloc");
  auto exec = testing::fixture_format("sched", "sched_process_exec");
  ASSERT_TRUE(kmalloc && exec);
  for (const char* c : {
           "hist:key=call_site.sym-offset:val=bytes_req.hex,bytes_alloc:sort=bytes_alloc.descending,call_site:size=100",
           "hist:keys=common_pid.execname,call_site.sym:values=hitcount.percent,bytes_req.graph:sort=bytes_req",
           "hist:keys=bytes_req.buckets=32:vals=bytes_alloc:nohitcount",
           "hist:keys=bytes_req.log2:vals=hitcount:sort=bytes_req.ascending:name=t1:pause",
           "hist:keys=common_stacktrace:vals=bytes_req if bytes_req > 1024 && (gfp_flags & 0x10 || !(node == -1))",
           "hist:keys=common_timestamp.usecs:clock=mono",
           "hist:keys=common_cpu,common_comm:vals=bytes_req:sort=common_cpu.descending,bytes_req",
       })
    EXPECT_TRUE(expect_round_trip(c, *kmalloc, {})) << c;
  for (const char* c : {
           "hist:keys=filename,comm:vals=hitcount if filename ~ \"/usr/bin/*\" && comm != \"bash\"",
           "hist:keys=pid:vals=hitcount if comm ~ \"[a-z]*sh?\"",
       })
    EXPECT_TRUE(expect_round_trip(c, *exec, {})) << c;
}

// The inter-event forms, each planned against what the ones before it
// registered, as the engine restores them in creation order.
TEST(RoundTrip, VariablesReferencesAndActions) {
  auto waking = testing::fixture_format("sched", "sched_waking");
  auto wakeup = testing::fixture_format("sched", "sched_wakeup");
  auto swtch = testing::fixture_format("sched", "sched_switch");
  auto write = testing::fixture_format("syscalls", "sys_enter_write");
  auto write_exit = testing::fixture_format("syscalls", "sys_exit_write");
  ASSERT_TRUE(waking && wakeup && swtch && write && write_exit);
  World w;
  w.define("wakeup_latency u64 lat; pid_t pid; char comm[16]");
  w.define("write_lat u64 lat; long ret");
  struct Step {
    const catalog::EventFormat* format;
    const char* command;
  };
  const Step steps[] = {
      {waking.get(), "hist:keys=pid:ts0=common_timestamp.usecs,waking_pid=pid"},
      {swtch.get(),
       "hist:keys=next_pid:woken_pid=$waking_pid:wakeup_lat=common_timestamp.usecs-$ts0:"
       "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,$woken_pid,next_comm)"},
      {swtch.get(), "hist:keys=next_pid:vals=$wakeup_lat:sort=wakeup_lat"},
      // The qualified spelling, which the kernel prints as $system.event.var.
      {write.get(), "hist:keys=common_pid:t0=common_timestamp"},
      {write_exit.get(),
       "hist:keys=common_pid:lat=common_timestamp-syscalls.sys_enter_write.$t0:"
       "onmatch(syscalls.sys_enter_write).write_lat($lat,ret)"},
      {write_exit.get(),
       "hist:keys=common_pid:d2=common_timestamp-$syscalls.sys_enter_write.t0,l2=ret*2:"
       "vals=$l2,$d2:sort=$l2.descending,l2"},
      {wakeup.get(), "hist:keys=pid:ts1=common_timestamp:onchange($ts1).save(comm,prio)"},
      {wakeup.get(), "hist:keys=common_pid:m=prio:onmax($m).snapshot()"},
  };
  for (const Step& s : steps) {
    auto refused = pipeline::plan_command(s.command, *s.format, w.registry);
    ASSERT_TRUE(refused.ok()) << s.command << ": " << (refused.ok() ? "" : refused.error().message());
    auto p = expect_round_trip(s.command, *s.format, w.registry);
    ASSERT_TRUE(p.has_value());
    w.add(*p);
  }
}

// A command of 4095 bytes is accepted; its printed line, with the defaults
// spelled out, is over a page and still restores.
TEST(RoundTrip, APageLongCommandWhosePrintedLineIsLonger) {
  auto kmalloc = testing::fixture_format("kmem", "kmalloc");
  ASSERT_TRUE(kmalloc);
  std::string command = "hist:keys=common_pid if bytes_req != 1";
  for (int n = 2; command.size() < 4095 - 24; ++n) command += " && bytes_req != " + std::to_string(n);
  command.append(4095 - command.size(), ' ');
  ASSERT_EQ(command.size(), 4095u);
  auto p = expect_round_trip(command, *kmalloc, {});
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->trigger_text().size(), 4096u);
  // What users write stays limited to a page.
  EXPECT_FALSE(pipeline::plan_command(p->trigger_text(), *kmalloc).ok());
}

TEST(RoundTrip, ThePrintedSpellingsParse) {
  auto r = parse::parse_hist("hist:keys=pid:vals=$sched.sched_waking.ts0:sort=$sched.sched_waking.ts0.descending");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const parse::ExprNode& ref = r->exprs.at(0).at(r->exprs.at(0).root);
  EXPECT_EQ(ref.kind, parse::ExprNode::Kind::VarRef);
  EXPECT_EQ(ref.system, "sched");
  EXPECT_EQ(ref.event, "sched_waking");
  EXPECT_EQ(ref.var, "ts0");
  ASSERT_EQ(r->sort.size(), 1u);
  EXPECT_EQ(r->sort[0].name, "$sched.sched_waking.ts0");
  EXPECT_TRUE(r->sort[0].descending);
  // Neither spelling takes a second '$'.
  EXPECT_FALSE(parse::parse_hist("hist:keys=pid:vals=$sched.sched_waking.$ts0").ok());
  EXPECT_FALSE(parse::parse_hist("hist:keys=pid:vals=$$ts0").ok());
}

}  // namespace
}  // namespace histd
