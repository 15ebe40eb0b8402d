// SPDX-License-Identifier: GPL-2.0-only
// The renderers over what the engine's reads return (histd/readout.h): the
// text and the JSON of one value, without root.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>

#include "histd/readout.h"
#include "histd/render.h"
#include "test_support.h"

namespace histd {
namespace {

using readout::TriggerState;

std::vector<uint8_t> key_of(uint64_t v) {
  std::vector<uint8_t> k(8);
  std::memcpy(k.data(), &v, 8);
  return k;
}

// kmem:kmalloc's tables as a read returns them: two entries, the second trigger paused.
readout::EventHist two_tables() {
  readout::EventHist h{"kmem", "kmalloc", {}, {}};
  readout::HistTable t;
  t.plan = testing::plan_ok("hist:keys=common_pid:vals=bytes_req");
  t.table = t.plan.columns();
  const uint64_t a[] = {3, 300}, b[] = {1, 64};
  t.table.add(key_of(7), a);
  t.table.add(key_of(9), b);
  t.table.hits = 4;
  t.memory = plan::map_memory(t.plan, 2);
  t.missed = 5;
  h.tables.push_back(t);
  readout::HistTable paused;
  paused.plan = testing::plan_ok("hist:keys=call_site.hex");
  paused.table = paused.plan.columns();
  paused.paused = true;
  h.tables.push_back(std::move(paused));
  return h;
}

TEST(ReadoutRender, HistTextAndJsonOfOneValue) {
  const readout::EventHist h = two_tables();
  const std::string text = render::hist_text(h, render::null_resolver());
  EXPECT_EQ(text,
            "# event histogram\n#\n# trigger info: hist:keys=common_pid:vals=hitcount,bytes_req:sort=hitcount:"
            "size=2048 [active]\n#\n\n"
            "{ common_pid:          7 } hitcount:          3  bytes_req:        300\n"
            "{ common_pid:          9 } hitcount:          1  bytes_req:         64\n"
            "\nTotals:\n    Hits: 4\n    Entries: 2\n    Dropped: 0\n    Missed: 5\n"
            "\n\n# event histogram\n#\n# trigger info: hist:keys=call_site.hex:vals=hitcount:sort=hitcount:"
            "size=2048 [paused]\n#\n\n\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 0\n");

  const auto doc = nlohmann::json::parse(render::hist_json(h, render::null_resolver()));
  EXPECT_EQ(doc["event"], "kmem:kmalloc");
  ASSERT_EQ(doc["tables"].size(), 2u);
  const auto& first = doc["tables"][0];
  EXPECT_EQ(first["trigger"], "hist:keys=common_pid:vals=hitcount,bytes_req:sort=hitcount:size=2048 [active]");
  EXPECT_EQ(first["entries"][1]["keys"]["common_pid"], 9);
  EXPECT_EQ(first["entries"][1]["values"]["bytes_req"], 64);
  EXPECT_EQ(first["totals"]["missed"], 5);
  EXPECT_EQ(first["map_memory"]["total"], plan::map_memory(h.tables[0].plan, 2).total());
  EXPECT_EQ(doc["tables"][1]["trigger"].get<std::string>().substr(0, 18), "hist:keys=call_sit");
}

TEST(ReadoutRender, LastErrorFollowsTheTablesInTextOnly) {
  readout::EventHist h{"kmem", "kmalloc", {}, {}};
  h.last_error = Diagnostic{ErrorCode::FieldNotFound, Span{10, 13}, "hist:keys=foo", {}};
  EXPECT_EQ(render::hist_text(h, render::null_resolver()),
            "\nERROR: Couldn't find field\n  Last command: hist:keys=foo\n\n");
  EXPECT_EQ(nlohmann::json::parse(render::hist_json(h, render::null_resolver()))["tables"].size(), 0u);
}

TEST(ReadoutRender, TrackedEntriesPrintTheirRecords) {
  readout::HistTable t;
  t.plan = testing::plan_ok("hist:keys=common_pid:m=bytes_req:onmax($m).save(call_site)");
  t.table = t.plan.columns();
  const uint64_t one[] = {1};
  t.table.add(key_of(7), one);
  std::vector<uint8_t> record(t.plan.var_record_size, 0);
  const uint64_t max = 42, site = 0x1234;
  for (const plan::ActionPlan& a : t.plan.actions) {
    std::memcpy(record.data() + a.track_offset, &max, 8);
    for (const plan::SavedField& f : a.saves) std::memcpy(record.data() + f.offset, &site, 8);
  }
  t.table.set_record(0, record);
  t.tracked = true;
  readout::EventHist h{"kmem", "kmalloc", {t}, {}};
  const std::string text = render::hist_text(h, render::null_resolver());
  EXPECT_NE(text.find("hitcount:          1\n\tmax:         42  call_site:       4660\n"), std::string::npos) << text;
  h.tables[0].tracked = false;
  EXPECT_EQ(render::hist_text(h, render::null_resolver()).find("max:"), std::string::npos);
}

TEST(ReadoutRender, RecordsFollowTheirEntriesThroughTheSort) {
  table::Table t = testing::plan_ok("hist:keys=common_pid:sort=hitcount.descending").columns();
  const uint64_t few[] = {1}, many[] = {5};
  t.add(key_of(1), few);
  t.add(key_of(2), many);
  table::sort_rows(t);
  ASSERT_EQ(t.row(0).key_number(0), 2u);
  const uint8_t second[] = {2, 2}, first[] = {1, 1};
  t.set_record(0, second);
  t.set_record(1, first);
  EXPECT_EQ(t.row(0).record[0], 2);
  EXPECT_EQ(t.row(1).record[0], 1);
  EXPECT_EQ(t.row(1).record.size(), 2u);
}

TEST(ReadoutRender, HistDebugSaysHowTheEventIsAttached) {
  readout::EventDebug d;
  d.system = "kmem";
  d.event = "kmalloc";
  readout::DebugTable t;
  t.plan = testing::plan_ok("hist:keys=common_pid");
  t.table_map_id = 0x2a;
  t.missed = 3;
  t.program_maps = 4;
  t.program_triggers = 1;
  d.tables = {t};
  d.maps_used = 4;
  d.max_maps = 64;
  EXPECT_EQ(render::hist_debug(d).find("attached:"), std::string::npos);
  EXPECT_NE(render::hist_debug(d).find("hist_data: 000000000000002a\n"), std::string::npos);
  EXPECT_NE(render::hist_debug(d).find("  program maps: 4 of the 64 one BPF program may use (all triggers of the "
                                       "event)\n"),
            std::string::npos);
  // With a chain: which program holds the trigger, with its own maps.
  d.chained_programs = 3;
  EXPECT_NE(render::hist_debug(d).find("  program maps: 4 of the 64 one BPF program may use (the event program: "
                                       "its 1 trigger that is not plain)\n"),
            std::string::npos);
  d.tables[0].chain_slot = 2;
  d.tables[0].program_maps = 13;
  d.tables[0].program_triggers = 4;
  EXPECT_NE(render::hist_debug(d).find("  program maps: 13 of the 64 one BPF program may use (program 2 of the 3 in "
                                       "the event's chain: 4 triggers)\n"),
            std::string::npos);
  d.tables[0].chain_slot = 0;
  d.attached = true;
  d.tracepoint = "kmem:kmalloc";
  d.event_missed = 7;
  EXPECT_NE(render::hist_debug(d).find("  attached: tracepoint kmem:kmalloc\n"), std::string::npos);
  // An eprobe's program runs at the event it is attached to.
  d.tracepoint = "kmem:kfree";
  EXPECT_NE(render::hist_debug(d).find("  attached: tracepoint kmem:kfree\n"), std::string::npos);
  d.tracepoint = "kmem:kmalloc";
  EXPECT_NE(render::hist_debug(d).find("  missed: 3 events since this trigger began (7 since"), std::string::npos);
  d.raw_syscall_nr = 1;
  EXPECT_NE(render::hist_debug(d).find("  attached: raw tracepoint sys_enter, system call 1 "), std::string::npos);
}

TEST(ReadoutRender, TriggerFileAndList) {
  // As the kernel lists its trigger commands.
  EXPECT_EQ(render::trigger_file({}),
            "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist "
            "disable_hist hist\n");
  readout::TriggerInfo enable{"sched", "sched_switch", "enable_hist:kmem:kmalloc:unlimited", false};
  readout::TriggerInfo active{"sched", "sched_switch", "hist:keys=pid"};
  readout::TriggerInfo paused = active;
  paused.state = TriggerState::Paused;
  readout::TriggerInfo gone{"kmem", "kmalloc", "hist:keys=junk"};
  gone.state = TriggerState::NotRestored;
  gone.not_restored = "no field junk";
  EXPECT_EQ(render::trigger_file({enable, active, paused}),
            "enable_hist:kmem:kmalloc:unlimited\nhist:keys=pid [active]\nhist:keys=pid [paused]\n");
  EXPECT_EQ(render::trigger_list({active, enable, gone}),
            "sched:sched_switch hist:keys=pid [active]\n"
            "sched:sched_switch enable_hist:kmem:kmalloc:unlimited\n"
            "kmem:kmalloc hist:keys=junk [not restored: no field junk]\n");
  EXPECT_EQ(render::trigger_line(gone), "hist:keys=junk");
}

TEST(ReadoutRender, ErrorLogEntries) {
  readout::ErrorLogEntry rejected;
  rejected.seconds = 12;
  rejected.microseconds = 3456;
  rejected.location = "hist:kmem:kmalloc";
  rejected.diagnostic = Diagnostic{ErrorCode::FieldNotFound, Span{10, 13}, "hist:keys=foo", {}};
  readout::ErrorLogEntry note;
  note.note = "histd: could not update a:b after c:d changed: why\n";
  EXPECT_EQ(render::error_log({rejected, note}),
            "[   12.003456] hist:kmem:kmalloc: error: Couldn't find field\n"
            "  Command: hist:keys=foo\n"
            "                     ^\n"
            "histd: could not update a:b after c:d changed: why\n");
}

TEST(ReadoutRender, SyntheticEvents) {
  using synth::SynthField;
  const synth::SynthDefinition def{"wakeup_lat", {SynthField{"u64", "lat", SynthField::Kind::Integer, 8, false, 0, 8}}};
  EXPECT_EQ(render::synthetic_events({def, def}), synth::list_line(def) + "\n" + synth::list_line(def) + "\n");
}

}  // namespace
}  // namespace histd
