// SPDX-License-Identifier: GPL-2.0-only
// Text is parsed once: trigger identity is a structural key (TriggerKey),
// the implicit field variables are planned from typed plans, and the
// pipeline takes parsed commands. No root needed.
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

namespace histd {
namespace {

using testing::command_corpus;
using testing::fixtures;

namespace fs = std::filesystem;

plan::HistPlan plan_ok(const std::string& text, const catalog::EventFormat& format,
                       const plan::PlanContext& registry = {}) {
  auto r = pipeline::plan_command(text, format, registry, parse::kMaxPrintedCommandBytes);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? r->plan : plan::HistPlan{};
}

plan::TriggerKey key_of(const std::string& text, const catalog::EventFormat& format) {
  return plan::trigger_key(plan_ok(text, format));
}

// What the kernel's hist_trigger_match() compares, and what it does not.
TEST(TriggerKey, TheKernelsRules) {
  auto kmalloc = testing::fixture_format("kmem", "kmalloc");
  ASSERT_TRUE(kmalloc);
  const auto& f = *kmalloc;
  const std::string base = "hist:keys=call_site.sym:vals=bytes_req";
  // Not compared: the size, pause/cont/clear, the defaults spelled out, the
  // order the tokens were written in, and '!'.
  EXPECT_EQ(key_of(base, f), key_of(base + ":size=4096", f));
  EXPECT_EQ(key_of(base, f), key_of(base + ":pause", f));
  EXPECT_EQ(key_of(base, f), key_of(base + ":cont", f));
  EXPECT_EQ(key_of(base, f), key_of(base + ":clear", f));
  EXPECT_EQ(key_of(base, f), key_of("hist:vals=bytes_req:keys=call_site.sym:sort=hitcount", f));
  EXPECT_EQ(key_of(base, f), key_of("!" + base, f));
  EXPECT_EQ(key_of("hist:keys=cpu", f), key_of("hist:keys=common_cpu", f));
  // Compared: keys and their modifiers, values, their order, the sort, the
  // name, the filter's text, nohitcount, variables, and the event.
  EXPECT_NE(key_of(base, f), key_of("hist:keys=call_site:vals=bytes_req", f));
  EXPECT_NE(key_of(base, f), key_of("hist:keys=call_site.sym-offset:vals=bytes_req", f));
  EXPECT_NE(key_of("hist:keys=bytes_req.buckets=32", f), key_of("hist:keys=bytes_req.buckets=64", f));
  EXPECT_NE(key_of(base, f), key_of("hist:keys=call_site.sym:vals=bytes_req.hex", f));
  EXPECT_NE(key_of("hist:keys=call_site:vals=bytes_req,bytes_alloc", f),
            key_of("hist:keys=call_site:vals=bytes_alloc,bytes_req", f));
  EXPECT_NE(key_of(base, f), key_of(base + ":sort=bytes_req", f));
  EXPECT_NE(key_of(base + ":sort=bytes_req", f), key_of(base + ":sort=bytes_req.descending", f));
  EXPECT_NE(key_of(base, f), key_of("hist:name=t:keys=call_site.sym:vals=bytes_req", f));
  EXPECT_NE(key_of(base, f), key_of(base + " if bytes_req > 1", f));
  EXPECT_NE(key_of(base + " if bytes_req > 1", f), key_of(base + " if bytes_req > 2", f));
  // The filter as written: the kernel compares the filter strings.
  EXPECT_NE(key_of(base + " if bytes_req > 1", f), key_of(base + " if bytes_req>1", f));
  EXPECT_NE(key_of(base, f), key_of(base + ":nohitcount", f));
  EXPECT_NE(key_of("hist:keys=call_site:x=bytes_req", f), key_of("hist:keys=call_site:y=bytes_req", f));
  auto exec = testing::fixture_format("sched", "sched_process_exec");
  ASSERT_TRUE(exec);
  EXPECT_NE(key_of("hist:keys=common_pid", f), key_of("hist:keys=common_pid", *exec));
  // histd's own rule, as before: the clock counts when a field reads it.
  EXPECT_NE(key_of("hist:keys=common_timestamp.usecs", f), key_of("hist:keys=common_timestamp.usecs:clock=boot", f));
  EXPECT_EQ(key_of("hist:keys=call_site", f), key_of("hist:keys=call_site:clock=boot", f));
}

// The key tells triggers apart exactly as the printed identity did, over
// the command corpus on every fixture event; a printed line and '!' + it
// name the trigger they were printed from.
TEST(TriggerKey, AgreesWithThePrintedIdentityOverTheCorpus) {
  const auto commands = command_corpus();
  ASSERT_GT(commands.size(), 40u);
  size_t compared = 0;
  for (const catalog::EventId& id : fixtures().events()) {
    auto format = testing::fixture_format(id.system, id.name);
    if (!format) continue;
    std::vector<plan::HistPlan> plans;
    for (const std::string& c : commands)
      if (auto p = pipeline::plan_command(c, *format)) plans.push_back(p->plan);
    for (const plan::HistPlan& p : plans) {
      const std::string line = p.trigger_text();
      EXPECT_EQ(key_of(line, *format), plan::trigger_key(p)) << line;
      EXPECT_EQ(key_of("!" + line, *format), plan::trigger_key(p)) << line;
    }
    for (const plan::HistPlan& a : plans)
      for (const plan::HistPlan& b : plans) {
        EXPECT_EQ(plan::trigger_key(a) == plan::trigger_key(b), a.identity() == b.identity())
            << a.trigger_text() << "\n"
            << b.trigger_text();
        ++compared;
      }
  }
  EXPECT_GT(compared, 200u);
}

// plan::encode is what the configuration directory compares (through the
// engine): equal strings exactly for equal keys, so every spelling of one
// trigger is one declaration and two triggers are never one.
TEST(TriggerKey, EncodedEqualExactlyWhenEqual) {
  auto kmalloc = testing::fixture_format("kmem", "kmalloc");
  ASSERT_TRUE(kmalloc);
  const auto& f = *kmalloc;
  auto encoded = [&](const std::string& text) { return plan::encode(key_of(text, f)); };
  // The spellings of one trigger an operator may edit between.
  const std::string base = "hist:keys=call_site:vals=hitcount,bytes_req";
  for (const std::string& same : {
           std::string("hist:keys=call_site:vals=bytes_req"),                // hitcount implicit
           std::string("hist:key=call_site:vals=bytes_req"),                 // key= for keys=
           std::string("hist:keys=call_site:val=bytes_req"),                 // val= for vals=
           std::string("hist:keys=call_site:vals=bytes_req:sort=hitcount"),  // the default sort
           std::string("hist:vals=bytes_req:keys=call_site:size=4096"),      // order, size
           std::string("hist:keys=call_site:vals=bytes_req:pause"),
       })
    EXPECT_EQ(encoded(base), encoded(same)) << same;
  EXPECT_EQ(encoded("hist:keys=bytes_req.bucket=64"), encoded("hist:keys=bytes_req.buckets=64"));
  EXPECT_NE(encoded(base), encoded("hist:keys=call_site:vals=bytes_alloc"));
  EXPECT_NE(encoded(base), encoded("hist:keys=call_site.hex:vals=bytes_req"));
  // Over the corpus on every fixture event: encoded keys agree with the keys.
  std::vector<plan::TriggerKey> keys;
  for (const catalog::EventId& id : fixtures().events())
    if (auto format = testing::fixture_format(id.system, id.name))
      for (const std::string& c : command_corpus())
        if (auto p = pipeline::plan_command(c, *format)) keys.push_back(plan::trigger_key(p->plan));
  ASSERT_GT(keys.size(), 20u);
  size_t equal = 0;
  for (const plan::TriggerKey& a : keys)
    for (const plan::TriggerKey& b : keys) {
      EXPECT_EQ(a == b, plan::encode(a) == plan::encode(b));
      equal += a == b;
    }
  EXPECT_GT(equal, keys.size());  // some commands of the corpus are one trigger
  // Strings are written with their lengths: no text runs into the next part.
  plan::TriggerKey one, two;
  one.vals = {"a,b"};
  two.vals = {"a", "b"};
  EXPECT_NE(plan::encode(one), plan::encode(two));
  one = two = plan::TriggerKey{};
  one.system = "a:b";
  two.event = "b";
  two.system = "a";
  EXPECT_NE(plan::encode(one), plan::encode(two));
  one = two = plan::TriggerKey{};
  one.filter = "";  // an empty filter is not none
  EXPECT_NE(plan::encode(one), plan::encode(two));
  one = two = plan::TriggerKey{};
  one.name = "";
  EXPECT_NE(plan::encode(one), plan::encode(two));
}

// The pipeline plans a parsed command as it plans its text.
TEST(ParseOnce, PlanningAParsedCommandIsPlanningItsText) {
  auto kmalloc = testing::fixture_format("kmem", "kmalloc");
  ASSERT_TRUE(kmalloc);
  for (const std::string& c : command_corpus()) {
    auto parsed = parse::parse_trigger(c);
    if (!parsed || !std::holds_alternative<parse::HistCommand>(*parsed)) continue;
    auto from_text = pipeline::plan_command(c, *kmalloc);
    auto from_parsed = pipeline::plan_command(std::get<parse::HistCommand>(*parsed), *kmalloc);
    ASSERT_EQ(from_text.ok(), from_parsed.ok()) << c;
    if (from_text)
      EXPECT_EQ(from_text->plan, *from_parsed) << c;
    else
      EXPECT_EQ(from_text.error().message(), from_parsed.error().message()) << c;
  }
}

// ---- implicit field variables ------------------------------------------------

parse::HistCommand parse_hist_ok(const std::string& text) {
  auto r = parse::parse_hist(text);
  EXPECT_TRUE(r.ok()) << text;
  return r.ok() ? *r : parse::HistCommand{};
}

TEST(FieldVars, WhichParamsNeedOne) {
  const auto cmd = parse_hist_ok(
      "hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($lat,sched.sched_waking.prio,next_comm,"
      "sched.sched_waking.$ts0,sched.sched_waking.comm.hex,sched.sched_waking.prio,sched.sched_waking.pid)");
  auto needs = plan::field_var_needs(cmd, "sched", "sched_switch", {});
  // $lat and next_comm are this event's, $ts0 a variable, comm.hex not a
  // plain field; prio is needed once however often it is named.
  ASSERT_EQ(needs.size(), 2u);
  EXPECT_EQ(needs[0].system, "sched");
  EXPECT_EQ(needs[0].event, "sched_waking");
  EXPECT_EQ(needs[0].field, "prio");
  EXPECT_EQ(needs[0].name, "synthetic_prio");
  EXPECT_EQ(needs[0].param, "sched.sched_waking.prio");
  EXPECT_EQ(needs[1].name, "synthetic_pid");

  // One the registry holds already is not made again.
  plan::PlanContext reg;
  plan::RegisteredVar held;
  held.system = "sched";
  held.event = "sched_waking";
  held.name = "synthetic_prio";
  reg.vars.push_back(held);
  needs = plan::field_var_needs(cmd, "sched", "sched_switch", reg);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(needs[0].name, "synthetic_pid");

  // On the matching event itself a field is read directly.
  EXPECT_TRUE(plan::field_var_needs(cmd, "sched", "sched_waking", {}).empty());
  // Removals and pause/cont/clear create nothing.
  EXPECT_TRUE(plan::field_var_needs(parse_hist_ok("!" + cmd.command), "sched", "sched_switch", {}).empty());
  EXPECT_TRUE(plan::field_var_needs(parse_hist_ok(cmd.command + ":pause"), "sched", "sched_switch", {}).empty());
  // onmax() params are saved fields, not field variables.
  EXPECT_TRUE(plan::field_var_needs(parse_hist_ok("hist:keys=pid:m=prio:onmax($m).save(sched.sched_waking.prio)"),
                                    "sched", "sched_switch", {})
                  .empty());
}

// The field variable's trigger is what planning the command the kernel
// logs for it gives: keyed like the model, under its filter.
TEST(FieldVars, PlannedFromTheModelsTypedPlan) {
  auto waking = testing::fixture_format("sched", "sched_waking");
  ASSERT_TRUE(waking);
  const plan::FieldVarNeed need{"sched", "sched_waking", "prio", "synthetic_prio", "sched.sched_waking.prio"};
  for (const char* model_text : {
           "hist:keys=pid:ts0=common_timestamp.usecs",
           "hist:keys=pid,comm:vals=prio:ts0=common_timestamp:size=256 if prio < 100 && comm ~ \"k*\"",
           "hist:keys=common_pid.execname,target_cpu.hex:sort=target_cpu",
           "hist:keys=cpu,prio.log2",
           "hist:keys=pid.buckets=10:name=shared",
           "hist:keys=common_stacktrace",
       }) {
    const plan::HistPlan model = plan_ok(model_text, *waking);
    auto made = plan::plan_field_var(need, model, *waking);
    ASSERT_TRUE(made.ok()) << model_text << ": " << made.error().message();
    std::string expected = "hist:keys=";
    for (size_t k = 0; k < model.keys.size(); ++k) expected += (k ? "," : "") + model.keys[k].printed;
    expected += ":synthetic_prio=prio";
    if (model.filter) expected += " if " + model.filter_text;
    EXPECT_EQ(made->command.command, expected);
    EXPECT_EQ(made->plan, plan_ok(expected, *waking)) << model_text;
    EXPECT_EQ(made->plan.vars.size(), 1u);
  }
  // A field that cannot be a variable is refused, with the logged command.
  auto sched_switch = testing::fixture_format("sched", "sched_switch");
  ASSERT_TRUE(sched_switch);
  const plan::HistPlan model = plan_ok("hist:keys=next_pid", *sched_switch);
  auto bad = plan::plan_field_var({"sched", "sched_switch", "nope", "synthetic_nope", "sched.sched_switch.nope"}, model,
                                  *sched_switch);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().command, "hist:keys=next_pid:synthetic_nope=nope");
  auto as_text = pipeline::plan_command(bad.error().command, *sched_switch);
  ASSERT_FALSE(as_text.ok());
  EXPECT_EQ(bad.error().message(), as_text.error().message());
  EXPECT_EQ(bad.error().span.begin, as_text.error().span.begin);
}

// ---- codegen ------------------------------------------------------------------

// Whether a unit asks the kernel for common_pid is decided from the plans;
// it is exactly whether the code reads it.
TEST(ParseOnce, TheEntryReadsThePidExactlyWhenTheCodeDoes) {
  size_t units = 0, reading = 0;
  for (const catalog::EventId& id : fixtures().events()) {
    auto format = testing::fixture_format(id.system, id.name);
    if (!format) continue;
    std::vector<std::string> commands = command_corpus();
    for (const char* c :
         {"hist:keys=common_cpu if common_pid == 1", "hist:keys=common_cpu:vals=common_pid",
          "hist:keys=common_cpu:x=common_pid*2", "hist:keys=common_cpu:x=common_pid*0", "hist:keys=common_pid.execname",
          "hist:keys=common_cpu:vals=common_pid-1", "hist:keys=common_cpu:m=common_cpu:onmax($m).save(common_pid)",
          "hist:keys=common_cpu:m=common_cpu:onmax($m).snapshot()"})
      commands.push_back(c);
    for (const std::string& c : commands) {
      auto p = pipeline::plan_command(c, *format);
      if (!p) continue;
      const std::string unit = codegen::generate_event_unit({codegen::TriggerInput{&p->plan, 0}}).source;
      const std::string body = unit.substr(0, unit.find("HISTD_EVENT_ENTRY("));
      const bool reads =
          body.find("c->pid") != std::string::npos || body.find("histd_synth_begin(") != std::string::npos;
      const bool asks = unit.find("HISTD_EVENT_ENTRY(handle, 0, 1)") != std::string::npos ||
                        unit.find("HISTD_EVENT_ENTRY(handle, 1, 1)") != std::string::npos;
      EXPECT_EQ(asks, reads) << c << " on " << id.system << ":" << id.name;
      ++units;
      reading += reads;
    }
  }
  EXPECT_GT(units, 100u);  // the corpus and the lines above on every event
  EXPECT_GT(reading, 0u);
}

}  // namespace
}  // namespace histd
