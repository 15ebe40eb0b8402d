// SPDX-License-Identifier: GPL-2.0-only
// What histctl computes from hist.json's document (daemon/histctl): the key
// show --percentiles takes them over, the percentiles per label set as JSON
// and text, and watch's intervals (deltas, rates, resets, the JSON line and
// the terminal's columns).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "histctl/interval.h"
#include "histctl/percentiles.h"
#include "histctl/watch.h"

namespace histd::histctl {
namespace {

using modifier::KeyTransform;
using nlohmann::json;

const std::vector<quantile::Percentile> kP50_90 = {{50'000'000}, {90'000'000}};

json entry(json keys, json values) { return json{{"keys", std::move(keys)}, {"values", std::move(values)}}; }

json table(const std::string& trigger, json entries, uint64_t hits = 0) {
  return json{{"trigger", trigger},
              {"entries", std::move(entries)},
              {"totals", {{"hits", hits}, {"entries", 0}, {"dropped", 0}, {"missed", 0}}}};
}

// ---- which key --------------------------------------------------------------

KeyChoice chosen(const json& t, KeyRules rules = {}) {
  auto c = choose_key(t, rules);
  EXPECT_TRUE(c.ok()) << t.dump() << ": " << (c.ok() ? "" : c.error());
  return c.ok() ? *c : KeyChoice{};
}

std::string refused(const json& t, KeyRules rules = {}) {
  auto c = choose_key(t, rules);
  EXPECT_FALSE(c.ok()) << t.dump();
  return c.ok() ? "" : c.error();
}

TEST(ChooseKey, TheBucketKeyWhateverElse) {
  auto c = chosen(table("hist:keys=fd.log2:vals=hitcount:sort=hitcount:size=2048 [active]", json::array()));
  EXPECT_EQ(c.name, "fd");
  EXPECT_EQ(c.written, "fd.log2");
  EXPECT_EQ(c.scale.transform, KeyTransform::Log2);
  c = chosen(
      table("hist:keys=common_pid,fd.buckets=100:vals=hitcount:sort=hitcount:size=2048 if common_pid == 5 "
            "[paused]",
            json::array({entry({{"common_pid", 5}, {"fd", 100}, {"fd.buckets", "100-199"}}, {{"hitcount", 1}})})));
  EXPECT_EQ(c.name, "fd");
  EXPECT_EQ(c.written, "fd.buckets=100");
  EXPECT_EQ(c.scale.transform, KeyTransform::Buckets);
  EXPECT_EQ(c.scale.buckets, 100u);
  // Without plain keys allowed (watch) it is still the one.
  EXPECT_EQ(chosen(table("hist:keys=fd.log2,common_pid", json::array()), KeyRules{"", false}).written, "fd.log2");
}

TEST(ChooseKey, ALonePlainNumber) {
  const json t =
      table("hist:keys=common_pid.execname,fd:vals=hitcount:sort=hitcount:size=2048 [active]",
            json::array({entry({{"common_pid", 7}, {"common_pid.execname", "sh"}, {"fd", 3}}, {{"hitcount", 2}})}));
  const KeyChoice c = chosen(t);
  EXPECT_EQ(c.name, "fd");
  EXPECT_EQ(c.scale.transform, KeyTransform::None);
  // A timestamp in microseconds is a plain number too.
  EXPECT_EQ(chosen(table("hist:keys=common_timestamp.usecs", json::array())).written, "common_timestamp.usecs");
  EXPECT_EQ(refused(t, KeyRules{"", false}), "it has no .log2 or .buckets key");
}

TEST(ChooseKey, SaysWhyNone) {
  EXPECT_EQ(refused(table("hist:keys=common_pid,fd:vals=hitcount", json::array())),
            "it has several numeric keys (common_pid, fd): name one with --key");
  EXPECT_EQ(refused(table("hist:keys=fd.log2,count.buckets=10", json::array())),
            "it has several bucket keys (fd.log2, count.buckets=10): name one with --key");
  EXPECT_EQ(refused(table("hist:keys=common_pid.execname",
                          json::array({entry({{"common_pid", 7}, {"common_pid.execname", "sh"}}, {{"hitcount", 1}})}))),
            "it has no .log2, .buckets or numeric key to take percentiles over");
  EXPECT_EQ(refused(table("hist:keys=common_comm", json::array({entry({{"common_comm", "sh"}}, {{"hitcount", 1}})}))),
            "it has no .log2, .buckets or numeric key to take percentiles over");
  EXPECT_EQ(refused(table("hist:keys=common_stacktrace", json::array())),
            "it has no .log2, .buckets or numeric key to take percentiles over");
  EXPECT_EQ(refused(table("hist:keys=fd.log2", json::array()), KeyRules{"count", true}),
            "it has no key 'count' (its keys: fd.log2)");
  EXPECT_EQ(refused(table("not a trigger", json::array())).substr(0, 29), "cannot read its trigger line:");
}

TEST(ChooseKey, TheKeyNamed) {
  const json t = table("hist:keys=common_pid,fd", json::array());
  EXPECT_EQ(chosen(t, KeyRules{"fd", true}).name, "fd");
  EXPECT_EQ(chosen(t, KeyRules{"common_pid", false}).name, "common_pid");
  EXPECT_EQ(chosen(table("hist:keys=fd.log2,count.buckets=10", json::array()), KeyRules{"count.buckets=10", true})
                .scale.buckets,
            10u);
}

// ---- the percentiles as JSON and text ---------------------------------------

TEST(PercentilesJson, PerLabelSetWithoutTheKeysRenderedForms) {
  const json entries = json::array({
      entry({{"common_pid", 7}, {"fd", 11}, {"fd.log2", "2^11"}}, {{"hitcount", 9}}),
      entry({{"common_pid", 8}, {"fd", 2}, {"fd.log2", "2^2"}}, {{"hitcount", 1}}),
      entry({{"common_pid", 7}, {"fd", 12}, {"fd.log2", "2^12"}}, {{"hitcount", 1}}),
  });
  const KeyChoice key{"fd", "fd.log2", {KeyTransform::Log2, 0, false}};
  auto r = percentiles_json(entries, key, kP50_90);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(*r, json::parse(R"({"key": "fd.log2", "label_sets": [
    {"keys": {"common_pid": 7}, "hits": 10, "percentiles": [
      {"name": "p50", "percentile": 50, "lower": 1025, "upper": 2048, "estimate": 1593.333, "exact": false},
      {"name": "p90", "percentile": 90, "lower": 1025, "upper": 2048, "estimate": 2048.0, "exact": false}]},
    {"keys": {"common_pid": 8}, "hits": 1, "percentiles": [
      {"name": "p50", "percentile": 50, "lower": 3, "upper": 4, "estimate": 3.5, "exact": false},
      {"name": "p90", "percentile": 90, "lower": 3, "upper": 4, "estimate": 3.9, "exact": false}]}]})"));
}

TEST(PercentilesJson, SignedKeysAndErrors) {
  const KeyChoice key{"delta", "delta", {}};
  auto r = percentiles_json(
      json::array({entry({{"delta", -3}}, {{"hitcount", 3}}), entry({{"delta", 4}}, {{"hitcount", 1}})}), key, kP50_90);
  ASSERT_TRUE(r.ok());
  const json& p = (*r)["label_sets"][0]["percentiles"];
  EXPECT_EQ(p[0]["lower"], -3);
  EXPECT_EQ(p[0]["exact"], true);
  EXPECT_EQ(p[0]["estimate"], -3.0);
  EXPECT_EQ(p[1]["upper"], 4);
  EXPECT_EQ((*r)["label_sets"][0]["keys"], json::object());

  auto no_hitcount =
      percentiles_json(json::array({entry({{"fd", 1}}, {{"bytes", 3}})}), KeyChoice{"fd", "fd", {}}, kP50_90);
  ASSERT_FALSE(no_hitcount.ok());
  EXPECT_EQ(no_hitcount.error(), "it has no hitcount (nohitcount): nothing to weigh its key by");
  auto not_number =
      percentiles_json(json::array({entry({{"fd", "x"}}, {{"hitcount", 3}})}), KeyChoice{"fd", "fd", {}}, kP50_90);
  ASSERT_FALSE(not_number.ok());
  EXPECT_EQ(not_number.error(), "its key 'fd' is not a number");
}

json two_tables() {
  json doc{{"event", "syscalls:sys_enter_close"}, {"tables", json::array()}};
  json log2 = table("hist:keys=fd.log2:vals=hitcount:sort=hitcount:size=2048 [active]",
                    json::array({entry({{"fd", 11}, {"fd.log2", "2^11"}}, {{"hitcount", 900}}),
                                 entry({{"fd", 12}, {"fd.log2", "2^12"}}, {{"hitcount", 100}})}),
                    1000);
  log2["totals"]["missed"] = 3;
  doc["tables"].push_back(log2);
  doc["tables"].push_back(
      table("hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 [active]",
            json::array({entry({{"common_pid", 7}, {"common_pid.execname", "sh"}}, {{"hitcount", 2}})})));
  doc["tables"].push_back(table("hist:keys=common_pid,fd:vals=hitcount:sort=hitcount:size=2048 [active]",
                                json::array({entry({{"common_pid", 7}, {"fd", 4101}}, {{"hitcount", 1}}),
                                             entry({{"common_pid", 7}, {"fd", 4102}}, {{"hitcount", 1}}),
                                             entry({{"common_pid", 9}, {"fd", 5}}, {{"hitcount", 0}})})));
  doc["tables"].push_back(
      table("hist:keys=fd.buckets=10:vals=hitcount:sort=hitcount:size=2048 [paused]", json::array()));
  return doc;
}

TEST(EventPercentiles, EachTableItsOwnOrItsError) {
  const json result = event_percentiles(two_tables(), KeyRules{}, kP50_90);
  EXPECT_EQ(result["event"], "syscalls:sys_enter_close");
  EXPECT_EQ(result["percentiles"], json::parse("[50, 90]"));
  ASSERT_EQ(result["tables"].size(), 4u);
  EXPECT_EQ(result["tables"][0]["key"], "fd.log2");
  EXPECT_EQ(result["tables"][0]["totals"]["hits"], 1000);
  EXPECT_EQ(result["tables"][1]["error"], "it has no .log2, .buckets or numeric key to take percentiles over");
  EXPECT_EQ(result["tables"][1]["trigger"],
            "hist:keys=common_pid.execname:vals=hitcount:sort=hitcount:size=2048 [active]");
  EXPECT_EQ(result["tables"][2]["error"], "it has several numeric keys (common_pid, fd): name one with --key");
  EXPECT_EQ(result["tables"][3]["label_sets"], json::array());
  // --key fd: percentiles of fd per common_pid.
  const json by_fd = event_percentiles(two_tables(), KeyRules{"fd", true}, kP50_90);
  EXPECT_EQ(by_fd["tables"][2]["label_sets"].size(), 2u);
  EXPECT_EQ(by_fd["tables"][2]["label_sets"][0]["percentiles"][0]["lower"], 4101);
}

TEST(EventPercentiles, AsText) {
  const json result = event_percentiles(two_tables(), KeyRules{"fd", true},
                                        std::vector<quantile::Percentile>{{50'000'000}, {99'900'000}, {100'000'000}});
  EXPECT_EQ(percentiles_text(result),
            "# hist:keys=fd.log2:vals=hitcount:sort=hitcount:size=2048 [active]\n"
            "# percentiles of fd.log2 by hitcount; in [lower, upper]: the bucket that holds it, both ends included\n"
            "hits: 1000\n"
            "  p50    in [1025, 2048]  ~ 1593.3 (estimate within the bucket)\n"
            "  p99.9  in [2049, 4096]  ~ 4075.5 (estimate within the bucket)\n"
            "  p100   in [2049, 4096]  ~ 4096 (estimate within the bucket)\n"
            "Missed: 3 (events the kernel kept from the table: not counted here)\n"
            "\n"
            "# hist:keys=common_pid,fd:vals=hitcount:sort=hitcount:size=2048 [active]\n"
            "# percentiles of fd by hitcount; in [lower, upper]: the bucket that holds it, both ends included\n"
            "{\"common_pid\":7}  hits: 2\n"
            "  p50    = 4101 (exact)\n"
            "  p99.9  = 4102 (exact)\n"
            "  p100   = 4102 (exact)\n"
            "{\"common_pid\":9}  hits: 0 (no percentiles)\n"
            "\n"
            "# hist:keys=fd.buckets=10:vals=hitcount:sort=hitcount:size=2048 [paused]\n"
            "# percentiles of fd.buckets=10 by hitcount; in [lower, upper]: the bucket that holds it, both ends "
            "included\n"
            "no entries\n");
}

TEST(EventPercentiles, Cells) {
  EXPECT_EQ(estimate_text(870.44), "870.4");
  EXPECT_EQ(estimate_text(8192.0), "8192");
  EXPECT_EQ(estimate_text(-0.01), "0");
  EXPECT_EQ(percentile_cell(json{{"lower", 513}, {"upper", 1024}, {"estimate", 870.44}, {"exact", false}}),
            "[513, 1024] ~870.4");
  EXPECT_EQ(percentile_cell(json{{"lower", 7}, {"upper", 7}, {"estimate", 7.0}, {"exact", true}}), "=7");
}

// ---- watch's intervals --------------------------------------------------------

// The tables as a list: `{t}` as a json parameter is t itself under clang
// and [t] under gcc (CWG 2137).
json doc_of(std::initializer_list<json> tables) {
  return json{{"event", "syscalls:sys_enter_close"}, {"tables", json::array_t(tables)}};
}

const char* kLog2 = "hist:keys=fd.log2:vals=hitcount:sort=hitcount:size=2048 if common_pid == 5";

json log2_table(std::initializer_list<std::pair<int, uint64_t>> buckets, const char* state = " [active]") {
  json entries = json::array();
  uint64_t hits = 0;
  for (auto [v, n] : buckets) {
    entries.push_back(entry({{"fd", v}, {"fd.log2", "2^" + std::to_string(v)}}, {{"hitcount", n}}));
    hits += n;
  }
  json t = table(std::string(kLog2) + state, entries, hits);
  t["totals"]["entries"] = buckets.size();
  return t;
}

TEST(Interval, TheFirstReadCountsFromZeroWithoutRates) {
  const json r = event_interval(json(), doc_of({log2_table({{11, 900}})}), 0);
  const json& t = r["tables"][0];
  EXPECT_EQ(t["reset"], false);
  EXPECT_EQ(t["deltas"], json::parse(R"({"hits": 900, "dropped": 0, "missed": 0})"));
  EXPECT_FALSE(t.contains("rates"));
  EXPECT_EQ(t["entries"][0]["deltas"]["hitcount"], 900);
  EXPECT_FALSE(t["entries"][0].contains("rates"));
}

TEST(Interval, DeltasAndRatesNewKeysFromZero) {
  const json before = doc_of({log2_table({{11, 900}})});
  // Paused since: the same table.
  const json now = doc_of({log2_table({{11, 950}, {12, 90}}, " [paused]")});
  const json r = event_interval(before, now, 2.0);
  const json& t = r["tables"][0];
  EXPECT_EQ(t["reset"], false);
  EXPECT_EQ(t["deltas"]["hits"], 140);
  EXPECT_EQ(t["rates"]["hits"], 70.0);
  EXPECT_EQ(t["entries"][0]["deltas"]["hitcount"], 50);
  EXPECT_EQ(t["entries"][0]["rates"]["hitcount"], 25.0);
  EXPECT_EQ(t["entries"][1]["deltas"]["hitcount"], 90);
  EXPECT_EQ(t["entries"][1]["values"]["hitcount"], 90);
  EXPECT_TRUE(changed(t["entries"][0]));
  // Nothing new: deltas 0, not changed.
  const json still = event_interval(now, now, 1.0);
  EXPECT_EQ(still["tables"][0]["deltas"]["hits"], 0);
  EXPECT_FALSE(changed(still["tables"][0]["entries"][0]));
  // Rates rounded to 3 decimals.
  EXPECT_EQ(event_interval(before, now, 3.0)["tables"][0]["rates"]["hits"], 46.667);
}

TEST(Interval, AClearIsAResetNotANegativeDelta) {
  const json before = doc_of({log2_table({{11, 900}, {12, 90}})});
  // Cleared, then 30 closes: fewer hits, one key gone.
  const json r = event_interval(before, doc_of({log2_table({{11, 30}})}), 1.0);
  const json& t = r["tables"][0];
  EXPECT_EQ(t["reset"], true);
  EXPECT_EQ(t["deltas"]["hits"], 30);
  EXPECT_EQ(t["entries"][0]["deltas"]["hitcount"], 30);
  // Cleared and refilled past the old hits: the entry that went away says so.
  const json refilled = event_interval(before, doc_of({log2_table({{11, 1000}})}), 1.0);
  EXPECT_EQ(refilled["tables"][0]["reset"], true);
  EXPECT_EQ(refilled["tables"][0]["deltas"]["hits"], 1000);
  // One entry's count went down while the hits grew: a reset too.
  const json lower = event_interval(before, doc_of({log2_table({{11, 10}, {12, 2000}})}), 1.0);
  EXPECT_EQ(lower["tables"][0]["reset"], true);
}

TEST(Interval, TablesMatchedByTrigger) {
  const json other = table("hist:keys=fd:vals=hitcount:sort=hitcount:size=2048 [active]",
                           json::array({entry({{"fd", 3}}, {{"hitcount", 5}})}), 5);
  const json before = doc_of({other, log2_table({{11, 10}})});
  // The first table removed: the log2 one is matched by its trigger, not its place.
  const json r = event_interval(before, doc_of({log2_table({{11, 12}})}), 1.0);
  ASSERT_EQ(r["tables"].size(), 1u);
  EXPECT_EQ(r["tables"][0]["deltas"]["hits"], 2);
  EXPECT_EQ(r["tables"][0]["reset"], false);
}

TEST(Interval, ReportLineAndText) {
  const json before = doc_of({log2_table({{11, 900}, {13, 1}})});
  const json now = doc_of({log2_table({{11, 1800}, {12, 100}, {13, 1}})});
  const json report = interval_report(before, now, 2.0, KeyRules{"", false}, kP50_90);
  const json& p = report["tables"][0]["percentiles"];
  // Over the interval's 1000 closes: 900 in 2^11, 100 in 2^12.
  EXPECT_EQ(p["label_sets"][0]["hits"], 1000);
  EXPECT_EQ(p["label_sets"][0]["percentiles"][0]["lower"], 1025);
  EXPECT_EQ(p["label_sets"][0]["percentiles"][1]["upper"], 2048);

  const json line = json::parse(interval_line(report, 1700000000.12345, 2, 2.0004));
  EXPECT_EQ(line["time"], 1700000000.123);
  EXPECT_EQ(line["interval"], 2.0);
  EXPECT_EQ(line["elapsed"], 2.0);
  EXPECT_EQ(line["event"], "syscalls:sys_enter_close");
  ASSERT_EQ(line["tables"][0]["entries"].size(), 2u);  // 2^13 did not change
  EXPECT_EQ(line["tables"][0]["entries"][1]["keys"]["fd"], 12);
  EXPECT_EQ(line["tables"][0]["entries"][1]["deltas"]["hitcount"], 100);
  EXPECT_EQ(line["tables"][0]["entries"][1]["rates"]["hitcount"], 50.0);

  EXPECT_EQ(interval_text(report),
            "\n# hist:keys=fd.log2:vals=hitcount:sort=hitcount:size=2048 if common_pid == 5 [active]\n"
            "keys                        hitcount  delta  rate/s\n"
            "{\"fd\":11,\"fd.log2\":\"2^11\"}      1800   +900   450.0\n"
            "{\"fd\":12,\"fd.log2\":\"2^12\"}       100   +100    50.0\n"
            "1 entries unchanged\n"
            "Hits: 1901 (+1000)  Entries: 3  Dropped: 0\n"
            "percentiles of fd.log2 in this interval:\n"
            "label set  hits  p50                   p90\n"
            "{}         1000  [1025, 2048] ~1593.3  [1025, 2048] ~2048\n");
}

TEST(Interval, TextOfAResetAndOfTheFirstRefresh) {
  const json before = doc_of({log2_table({{11, 900}})});
  const json report = interval_report(before, doc_of({log2_table({{2, 3}})}), 1.0, KeyRules{"", false},
                                      std::vector<quantile::Percentile>{{50'000'000}});
  const std::string text = interval_text(report);
  EXPECT_NE(text.find("Hits: 3 (+3)  Entries: 1  Dropped: 0\n"
                      "reset: the table's counts went down (a clear): deltas count from 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{}            3  [3, 4] ~3.5\n"), std::string::npos) << text;
  const std::string first = interval_text(interval_report(json(), before, 0, KeyRules{"", false}, kP50_90));
  EXPECT_NE(first.find("{\"fd\":11,\"fd.log2\":\"2^11\"}       900   +900       -\n"), std::string::npos) << first;
  // No events: no percentiles.
  const std::string quiet = interval_text(interval_report(before, before, 1.0, KeyRules{"", false}, kP50_90));
  EXPECT_NE(quiet.find("\nno entry changed (1 entries)\n"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("\npercentiles of fd.log2 in this interval: none (no events)\n"), std::string::npos) << quiet;
}

TEST(Interval, ALabelSetWithoutEventsHasNoPercentiles) {
  auto t = [](uint64_t a, uint64_t b) {
    return doc_of({table("hist:keys=common_pid,fd.log2",
                         json::array({entry({{"common_pid", 1}, {"fd", 3}, {"fd.log2", "2^3"}}, {{"hitcount", a}}),
                                      entry({{"common_pid", 2}, {"fd", 3}, {"fd.log2", "2^3"}}, {{"hitcount", b}})}),
                         a + b)});
  };
  const json report = interval_report(t(5, 5), t(9, 5), 1.0, KeyRules{"", false}, kP50_90);
  EXPECT_NE(interval_text(report).find("label set         hits  p50          p90\n"
                                       "{\"common_pid\":1}     4  [5, 8] ~6.5  [5, 8] ~7.7\n"
                                       "{\"common_pid\":2}     0  -            -\n"),
            std::string::npos)
      << interval_text(report);
}

}  // namespace
// A big table is not a screen: the entries that changed most, the rest
// summed on one line, and the label sets with the most events.
TEST(Interval, TheTerminalShowsTheTopEntriesAndTheRestInALine) {
  auto t = [](uint64_t scale) {
    json entries = json::array();
    for (uint64_t pid = 1; pid <= 30; ++pid)
      entries.push_back(entry({{"common_pid", pid}, {"fd", 3}, {"fd.log2", "2^3"}}, {{"hitcount", pid * scale}}));
    return doc_of({table("hist:keys=common_pid,fd.log2", entries, 465 * scale)});
  };
  const json report = interval_report(t(1), t(2), 1.0, KeyRules{"", false}, kP50_90);
  const std::string text = interval_text(report, 3);
  const size_t p30 = text.find("{\"common_pid\":30,"), p29 = text.find("{\"common_pid\":29,"),
               p28 = text.find("{\"common_pid\":28,");
  ASSERT_NE(p30, std::string::npos) << text;
  EXPECT_LT(p30, p29);
  EXPECT_LT(p29, p28);
  EXPECT_EQ(text.find("{\"common_pid\":27,"), std::string::npos) << text;
  // 1 + 2 + ... + 27 more events in the 27 entries not shown.
  EXPECT_NE(text.find("27 more changed entries: hitcount +378\n"), std::string::npos) << text;
  EXPECT_NE(text.find("27 more label sets\n"), std::string::npos) << text;
}

}  // namespace histd::histctl
