// SPDX-License-Identifier: GPL-2.0-only
// The registry's state file, without a kernel: the form a restart restores
// it from (registry::saved_text, registry::read_saved), applied back as the
// engine restores it, gives the same registry.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "histd/parse.h"
#include "histd/registry.h"
#include "histd/synth.h"
#include "registry_support.h"

namespace histd {
namespace {

using registry::Registry;
using namespace testing;

// What only the kernel knows, as a save would read it: trigger 2 paused,
// trigger 3 with a missed base, every enable with one firing left.
registry::KernelFacts facts(const Registry& r) {
  return registry::KernelFacts{
      [&r](uint64_t uid) {
        auto [id, t] = r.find(uid);
        return t && t->paused;
      },
      [](uint64_t uid) { return uid == 3 ? uint64_t{7} : uint64_t{0}; },
      [](const catalog::EventId&, const registry::ControlTrigger& e) { return e.cmd.command; }};
}

// Applies a state file's entries as the engine restores them: each a
// command, a saved pause flag and configuration mark after its trigger.
Registry restored_from(std::string_view text) {
  Registry back(fixtures(), {});
  auto entries = registry::read_saved(text);
  EXPECT_TRUE(entries.ok()) << (entries.ok() ? "" : entries.error());
  if (!entries) return back;
  for (const registry::SavedEntry& e : *entries) {
    switch (e.kind) {
      case registry::SavedEntry::Kind::Synthetic: {
        auto w = registry::SynthWrite::parse(e.command, !e.config.empty());
        EXPECT_TRUE(w.ok()) << e.command;
        if (w) ok(back, *w);
        break;
      }
      case registry::SavedEntry::Kind::Eprobe: {
        auto w = registry::ProbeWrite::parse(e.command);
        EXPECT_TRUE(w.ok()) << e.command;
        if (w) ok(back, *w);
        break;
      }
      case registry::SavedEntry::Kind::Enabled:
        ok(back, registry::SynthEnable{e.event, true});
        break;
      case registry::SavedEntry::Kind::EventPids:
        break;  // the deployer's, not the registry's
      case registry::SavedEntry::Kind::EventFilter: {
        const size_t colon = e.event.find(':');
        ok(back, registry::EventFilter{{e.event.substr(0, colon), e.event.substr(colon + 1)}, e.command});
        break;
      }
      case registry::SavedEntry::Kind::EventEnabled: {
        const size_t colon = e.event.find(':');
        ok(back, registry::EventEnable{{e.event.substr(0, colon), e.event.substr(colon + 1)}, true});
        break;
      }
      case registry::SavedEntry::Kind::Trigger: {
        const size_t colon = e.event.find(':');
        const catalog::EventId id{e.event.substr(0, colon), e.event.substr(colon + 1)};
        const uint64_t next = back.next_uid();
        auto w = registry::TriggerWrite::parse(id, e.command, registry::kMaxPrintedCommandBytes, e.config);
        EXPECT_TRUE(w.ok()) << e.command;
        if (w) ok(back, *w);
        if (e.paused && back.next_uid() > next) ok(back, registry::TriggerMark{back.next_uid() - 1, true, e.config});
        break;
      }
    }
  }
  return back;
}

TEST(Registry, ItsStateFileRestoresIt) {
  Registry r(fixtures(), {});
  ok(r, synth_line("wakeup_latency u64 lat; pid_t pid; int prio"));
  ok(r, write(kWakeup, "hist:keys=pid:ts0=common_timestamp.usecs"));
  ok(r, write(kWaking,
              "hist:keys=pid:lat=common_timestamp.usecs-$ts0:"
              "onmatch(sched.sched_wakeup).wakeup_latency($lat,pid,sched.sched_wakeup.prio)"));
  ok(r, write(kKmalloc, "hist:name=t:keys=call_site:vals=bytes_req:size=4096:pause"));
  ok(r, write(kKmalloc, "hist:name=t:keys=call_site:vals=bytes_req if bytes_req > 10"));
  ok(r, write(kSwitch, "enable_hist:kmem:kmalloc:3 if prev_prio < 10"));
  ok(r, write(kSwitch, "disable_hist:sched:sched_waking"));
  ok(r, write(kSwitch, "traceoff:2 if prev_prio < 5"));
  ok(r, write(kSwitch, "enable_event:kmem:kmalloc"));
  ok(r, registry::SynthEnable{"wakeup_latency", true});
  ok(r, registry::EventEnable{kSwitch, true});
  ok(r, registry::EventEnable{kKmalloc, true});
  // One of histd's eprobes, a trigger on it, recorded.
  auto eprobe =
      registry::ProbeWrite::parse("e:myprobes/read kmem.kmalloc size=$bytes_req:s64 c=$comm if bytes_req > 64");
  ASSERT_TRUE(eprobe.ok());
  ok(r, *eprobe);
  const catalog::EventId kRead{"myprobes", "read"};
  ok(r, write(kRead, "hist:keys=common_pid:vals=size:sort=size.descending"));
  ok(r, registry::EventEnable{kRead, true});
  // Filter files: a kernel event's and an eprobe's.
  ok(r, registry::EventFilter{kSwitch, "prev_prio < 100 && next_comm ~ \"b*\"\n"});
  ok(r, registry::EventFilter{kRead, "size > 128"});
  // A declared trigger: its words and pause flag are the configuration's.
  const uint64_t declared = r.events().at(kKmalloc).hist.back().uid;
  ok(r, registry::TriggerMark{declared, true, "hist:name=t:keys=call_site:vals=bytes_req if bytes_req > 10"});

  const std::string text = registry::saved_text(r, facts(r), {});
  const Registry back = restored_from(text);
  ASSERT_EQ(back.events().size(), r.events().size());
  for (const auto& [id, ev] : r.events()) {
    const registry::EventTriggers* restored = back.triggers(id);
    ASSERT_NE(restored, nullptr) << id.name;
    ASSERT_EQ(restored->hist.size(), ev.hist.size()) << id.name;
    for (size_t i = 0; i < ev.hist.size(); ++i) {
      EXPECT_EQ(restored->hist[i].uid, ev.hist[i].uid);
      EXPECT_EQ(restored->hist[i].plan.trigger_text(), ev.hist[i].plan.trigger_text());
      EXPECT_EQ(plan::trigger_key(restored->hist[i].plan), plan::trigger_key(ev.hist[i].plan));
      EXPECT_EQ(restored->hist[i].plan.refs, ev.hist[i].plan.refs);
      EXPECT_EQ(restored->hist[i].paused, ev.hist[i].paused);
      EXPECT_EQ(restored->hist[i].config, ev.hist[i].config);
    }
    ASSERT_EQ(restored->controls.size(), ev.controls.size());
    for (size_t i = 0; i < ev.controls.size(); ++i) EXPECT_EQ(restored->controls[i].cmd, ev.controls[i].cmd);
  }
  EXPECT_EQ(back.map_memory(), r.map_memory());
  EXPECT_EQ(back.synthetics(), r.synthetics());
  EXPECT_EQ(back.enabled_events(), r.enabled_events());
  EXPECT_EQ(r.enabled_events().size(), 3u);
  EXPECT_EQ(back.eprobes(), r.eprobes());
  EXPECT_EQ(back.filters(), r.filters());
  ASSERT_EQ(r.filters().size(), 2u);
  EXPECT_EQ(r.filters().at(kSwitch).text, "prev_prio < 100 && next_comm ~ \"b*\"");
  EXPECT_NE(text.find("\"e:myprobes/read kmem.kmalloc size=$bytes_req:s64 c=$comm if bytes_req > 64\""),
            std::string::npos)
      << text;
  // Saved again, the restored registry is the same file.
  EXPECT_EQ(registry::saved_text(back, facts(back), {}), text);
  EXPECT_NE(text.find("\"missed_base\": 7"), std::string::npos) << text;
}

TEST(Registry, EntriesThatDidNotRestoreAreWrittenBackAsSaved) {
  const std::string old = R"({"version": 1, "synthetic_events": ["gone u64 x", 42],
    "enabled_synthetic_events": ["gone"], "config_synthetic_events": ["gone"],
    "triggers": [{"event": "nosuch:event", "command": "hist:keys=x", "paused": true, "missed_base": 3,
                  "config": "hist:keys=x", "later": "kept"}, {"command": 5}]})";
  auto kept = registry::read_saved(old);
  ASSERT_TRUE(kept.ok()) << kept.error();
  ASSERT_EQ(kept->size(), 5u);
  const registry::SavedEntry& trigger = (*kept)[2];
  EXPECT_EQ(trigger.kind, registry::SavedEntry::Kind::Trigger);
  EXPECT_EQ(trigger.event, "nosuch:event");
  EXPECT_TRUE(trigger.paused);
  EXPECT_EQ(trigger.missed_base, 3u);
  EXPECT_EQ(trigger.config, "hist:keys=x");
  EXPECT_EQ((*kept)[0].config, "gone");  // a declared synthetic event, by name
  EXPECT_EQ((*kept)[1].command, "");     // not a definition: kept as it was, never applied
  EXPECT_EQ((*kept)[3].command, "");
  // Written back with today's registry: every member as it was, even those
  // this histd does not know.
  Registry r(fixtures(), {});
  ok(r, write(kKmalloc, "hist:keys=call_site"));
  auto again = registry::read_saved(registry::saved_text(r, facts(r), *kept));
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 6u);
  std::vector<std::string> raws;
  for (const auto& e : *again) raws.push_back(e.raw);
  for (const auto& e : *kept) EXPECT_NE(std::find(raws.begin(), raws.end(), e.raw), raws.end()) << e.raw;
}

// set_event_pid is the kernel side's (BPF follows forks): saved from what
// the save reads of it, first among the entries, with the boot it is of.
TEST(Registry, SetEventPidIsSavedWithItsBoot) {
  Registry r(fixtures(), {});
  ok(r, write(kKmalloc, "hist:keys=call_site"));
  registry::KernelFacts kernel = facts(r);
  EXPECT_EQ(registry::saved_text(r, kernel, {}).find("event_pids"), std::string::npos);
  const registry::SavedPids saved{"6f1e0c4a-boot", {3, 7, 4000000}, true};
  kernel.event_pids = [&saved] { return std::optional(saved); };
  const std::string text = registry::saved_text(r, kernel, {});
  auto entries = registry::read_saved(text);
  ASSERT_TRUE(entries.ok()) << entries.error();
  ASSERT_EQ(entries->size(), 2u);
  const registry::SavedEntry& pids = entries->front();
  EXPECT_EQ(pids.kind, registry::SavedEntry::Kind::EventPids);
  ASSERT_TRUE(pids.pids);
  EXPECT_EQ(*pids.pids, saved);
  // One that did not restore is written back as saved, unless the list
  // is saved anew.
  auto again = registry::read_saved(registry::saved_text(r, facts(r), *entries));
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->front().pids);
  EXPECT_EQ(*again->front().pids, saved);
  // A member that is not one reads as no list.
  auto odd = registry::read_saved(R"({"triggers": [], "event_pids": {"boot_id": "b", "pids": [-1]}})");
  ASSERT_TRUE(odd.ok());
  ASSERT_EQ(odd->size(), 1u);
  EXPECT_FALSE(odd->front().pids);
}

TEST(Registry, WhatIsNotAStateFileIsSaidSo) {
  EXPECT_EQ(registry::read_saved("").error(), "not a histd state file");
  EXPECT_EQ(registry::read_saved("[1, 2]").error(), "not a histd state file");
  EXPECT_EQ(registry::read_saved(R"({"triggers": {}})").error(), "not a histd state file");
  EXPECT_EQ(registry::read_saved(R"({"version": 2, "triggers": []})").error(),
            "state file version 2, this histd reads version 1");
  EXPECT_TRUE(registry::read_saved(R"({"triggers": []})").ok());  // the oldest files have no version
}

// A byte changed since histd wrote the file is caught, however valid the
// JSON it leaves; a file an older histd wrote (no checksum) still reads.
TEST(Registry, AStateFileChangedSinceItWasWrittenIsSaidSo) {
  Registry r(fixtures(), {});
  ok(r, write(kKmalloc, "hist:keys=call_site:vals=bytes_req if bytes_req > 0"));
  const std::string text = registry::saved_text(r, facts(r), {});
  ASSERT_NE(text.find("\"sha256\": \""), std::string::npos) << text;
  EXPECT_TRUE(registry::read_saved(text).ok());
  std::string flipped = text;
  flipped.replace(flipped.find("> 0"), 3, "> 7");
  EXPECT_EQ(registry::read_saved(flipped).error(),
            "its checksum does not match its contents: changed since histd wrote it");
  nlohmann::json older = nlohmann::json::parse(text);
  older.erase("sha256");
  std::string unsummed = older.dump(2);
  EXPECT_EQ(restored_from(unsummed), r) << unsummed;
  unsummed.replace(unsummed.find("> 0"), 3, "> 7");
  EXPECT_TRUE(registry::read_saved(unsummed).ok()) << "without a checksum there is nothing to check";
}

}  // namespace
}  // namespace histd
