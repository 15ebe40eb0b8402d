// SPDX-License-Identifier: GPL-2.0-only
// Tables as Prometheus metric families (render::metrics, docs/metrics.md):
// families and their names, counters, labels in the rendered form of their
// keys, real histograms from .log2 and .buckets keys, escaping, the series
// cap, and the two formats' differences. Without root.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "histd/readout.h"
#include "histd/render.h"
#include "table_support.h"

namespace histd {
namespace {

using render::MetricsFormat;
using render::MetricsOptions;

using testing::key_of;
using testing::table_of;

std::string metrics_of(const readout::HistTable& t, MetricsOptions o = {}) {
  readout::EventHist h{"kmem", "kmalloc", {t}, {}};
  return render::metrics({{"", {h}}}, render::null_resolver(), o);
}

TEST(MetricsRender, CountersPerKeyInTheTextFormat) {
  readout::HistTable t = table_of("hist:keys=common_pid:vals=bytes_req:name=allocs");
  const uint64_t a[] = {3, 300}, b[] = {1, 64};
  t.table.add(key_of({7}), a);
  t.table.add(key_of({9}), b);
  t.table.hits = 4;
  t.table.drops = 2;
  t.missed = 5;
  const std::string help = "kmem:kmalloc " + t.plan.trigger_text();
  EXPECT_EQ(
      metrics_of(t),
      "# HELP histd_allocs_hitcount_total " + help +
          "\n# TYPE histd_allocs_hitcount_total counter\n"
          "histd_allocs_hitcount_total{common_pid=\"7\"} 3\nhistd_allocs_hitcount_total{common_pid=\"9\"} 1\n"
          "# HELP histd_allocs_bytes_req_total " +
          help +
          "\n# TYPE histd_allocs_bytes_req_total counter\n"
          "histd_allocs_bytes_req_total{common_pid=\"7\"} 300\nhistd_allocs_bytes_req_total{common_pid=\"9\"} 64\n"
          "# HELP histd_table_hits_total events counted by the table (its Hits)\n"
          "# TYPE histd_table_hits_total counter\nhistd_table_hits_total{table=\"histd_allocs\"} 4\n"
          "# HELP histd_table_entries entries in the table\n# TYPE histd_table_entries gauge\n"
          "histd_table_entries{table=\"histd_allocs\"} 2\n"
          "# HELP histd_table_dropped_total events the full table dropped (its Dropped)\n"
          "# TYPE histd_table_dropped_total counter\nhistd_table_dropped_total{table=\"histd_allocs\"} 2\n"
          "# HELP histd_table_missed_total events the kernel's BPF recursion guard kept from the table\n"
          "# TYPE histd_table_missed_total counter\nhistd_table_missed_total{table=\"histd_allocs\"} 5\n"
          "# HELP histd_metrics_series_dropped label sets of the table not exported (past --metrics-max-series)\n"
          "# TYPE histd_metrics_series_dropped gauge\nhistd_metrics_series_dropped{table=\"histd_allocs\"} 0\n");
}

TEST(MetricsRender, OpenMetricsNamesCounterFamiliesWithoutTotalAndEnds) {
  readout::HistTable t = table_of("hist:keys=common_pid:name=allocs");
  const uint64_t a[] = {3};
  t.table.add(key_of({7}), a);
  const std::string text = metrics_of(t, {MetricsFormat::OpenMetrics, 100});
  EXPECT_NE(text.find("# TYPE histd_allocs_hitcount counter\nhistd_allocs_hitcount_total{common_pid=\"7\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE histd_table_hits counter\nhistd_table_hits_total{table=\"histd_allocs\"} 0\n"),
            std::string::npos);
  EXPECT_TRUE(text.ends_with("\n# EOF\n"));
  EXPECT_FALSE(metrics_of(t).ends_with("# EOF\n"));
}

TEST(MetricsRender, AnUnnamedTableIsItsEventAndAHashOfItsTrigger) {
  readout::HistTable a = table_of("hist:keys=common_pid");
  readout::HistTable b = table_of("hist:keys=common_pid if bytes_req > 10");
  const std::string ta = metrics_of(a), tb = metrics_of(b);
  ASSERT_EQ(ta.find("# HELP histd_kmem_kmalloc_"), 0u) << ta;
  const std::string fa = ta.substr(7, ta.find(' ', 7) - 7), fb = tb.substr(7, tb.find(' ', 7) - 7);
  EXPECT_EQ(fa.size(), std::string("histd_kmem_kmalloc_01234567_hitcount_total").size()) << fa;
  EXPECT_NE(fa, fb);
  EXPECT_EQ(ta, metrics_of(a)) << "the same trigger, the same family";
}

// The `_bucket` samples of `text`'s series `series` (e.g.
// "histd_sizes_bytes_req_bucket{common_pid=\"7\","), each "le value".
std::vector<std::string> buckets_of(const std::string& text, const std::string& series) {
  std::vector<std::string> out;
  for (size_t at = text.find(series); at != std::string::npos; at = text.find(series, at + 1)) {
    const size_t le = text.find("le=\"", at) + 4, close = text.find('"', le), end = text.find('\n', close);
    out.push_back(text.substr(le, close - le) + text.substr(close + 2, end - close - 2));
  }
  return out;
}

TEST(MetricsRender, ALoneLog2KeyIsAHistogramOverEveryPowerOfTwoOfItsType) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2:vals=bytes_req:name=sizes");
  // The kernel's log2 bucket 2^v holds (2^(v-1), 2^v].
  const uint64_t b3[] = {2, 12}, b5[] = {1, 20};
  t.table.add(key_of({5}), b5);
  t.table.add(key_of({3}), b3);
  const std::string text = metrics_of(t);
  const std::vector<std::string> b = buckets_of(text, "histd_sizes_bytes_req_bucket{");
  // bytes_req is a size_t: 2^0 .. 2^63, the last bucket (2^63, 2^64-1], +Inf.
  ASSERT_EQ(b.size(), 66u) << text;
  EXPECT_EQ(std::vector<std::string>(b.begin(), b.begin() + 7),
            (std::vector<std::string>{"1 0", "2 0", "4 0", "8 2", "16 2", "32 3", "64 3"}));
  EXPECT_EQ(b[63], "9.223372036854776e+18 3");  // 2^63, as a float past 2^53
  EXPECT_EQ(b[65], "+Inf 3");
  EXPECT_NE(text.find("histd_sizes_bytes_req_bucket{le=\"+Inf\"} 3\n"
                      "histd_sizes_bytes_req_count 3\n"
                      "histd_sizes_bytes_req_sum 32\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("histd_sizes_hitcount"), std::string::npos) << "the histogram counts the hits";
  EXPECT_EQ(text.find("bytes_req_total"), std::string::npos) << "the sum is the histogram's _sum";
}

TEST(MetricsRender, AHistogramsBucketsEndWithItsFieldsType) {
  readout::HistTable t = table_of("hist:keys=node.log2:name=nodes");  // int node: 2^0 .. 2^32
  const std::vector<std::string> b = buckets_of(metrics_of(t), "histd_nodes_node_bucket{");
  ASSERT_EQ(b.size(), 34u);
  EXPECT_EQ(b[32], "4294967296 0");
}

// Before its first hit the histogram is there, all zeros: Prometheus's
// rate() then sees every first hit as an increase, not a new series.
TEST(MetricsRender, AnEmptyLoneHistogramIsThereWithZeros) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2:name=sizes");
  const std::string text = metrics_of(t);
  const std::vector<std::string> b = buckets_of(text, "histd_sizes_bytes_req_bucket{");
  ASSERT_EQ(b.size(), 66u) << text;
  for (const std::string& bucket : b) EXPECT_TRUE(bucket.ends_with(" 0")) << bucket;
  EXPECT_NE(text.find("histd_sizes_bytes_req_count 0\n"), std::string::npos) << text;
}

TEST(MetricsRender, ALog2KeyBesideOthersIsAHistogramPerLabelSet) {
  readout::HistTable t = table_of("hist:keys=common_pid,bytes_req.log2:vals=bytes_alloc:name=sizes");
  const uint64_t a[] = {1, 64}, b[] = {2, 128}, c[] = {4, 512};
  t.table.add(key_of({7, 3}), a);
  t.table.add(key_of({7, 4}), b);
  t.table.add(key_of({9, 4}), c);
  const std::string text = metrics_of(t);
  const std::vector<std::string> seven = buckets_of(text, "histd_sizes_bytes_req_bucket{common_pid=\"7\",");
  const std::vector<std::string> nine = buckets_of(text, "histd_sizes_bytes_req_bucket{common_pid=\"9\",");
  ASSERT_EQ(seven.size(), 66u) << text;
  ASSERT_EQ(nine.size(), 66u) << text;
  EXPECT_EQ(std::vector<std::string>(seven.begin() + 2, seven.begin() + 6),
            (std::vector<std::string>{"4 0", "8 1", "16 3", "32 3"}));
  EXPECT_EQ(std::vector<std::string>(nine.begin() + 2, nine.begin() + 6),
            (std::vector<std::string>{"4 0", "8 0", "16 4", "32 4"}));
  EXPECT_NE(text.find("histd_sizes_bytes_req_count{common_pid=\"7\"} 3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("_sum"), std::string::npos) << "no value sums bytes_req";
  const std::string om = metrics_of(t, {MetricsFormat::OpenMetrics, 100});
  EXPECT_EQ(om.find("_count{"), std::string::npos) << "OpenMetrics: a _count only beside a _sum\n" << om;
  EXPECT_NE(om.find("histd_sizes_bytes_req_bucket{common_pid=\"7\",le=\"+Inf\"} 3\n"), std::string::npos) << om;
  EXPECT_NE(text.find("histd_sizes_bytes_alloc_total{common_pid=\"7\"} 192\n"), std::string::npos) << text;
}

TEST(MetricsRender, LinearBucketsAreAHistogramOfTheirFirst64Steps) {
  readout::HistTable t = table_of("hist:keys=bytes_req.buckets=100:name=sizes");
  const uint64_t a[] = {4}, b[] = {1}, past[] = {2};
  t.table.add(key_of({200}), a);
  t.table.add(key_of({0}), b);
  t.table.add(key_of({6400}), past);  // past the 64th step: in +Inf alone
  const std::vector<std::string> bk = buckets_of(metrics_of(t), "histd_sizes_bytes_req_bucket{");
  ASSERT_EQ(bk.size(), 65u);
  EXPECT_EQ(std::vector<std::string>(bk.begin(), bk.begin() + 4),
            (std::vector<std::string>{"99 1", "199 1", "299 5", "399 5"}));
  EXPECT_EQ(bk[63], "6399 5");
  EXPECT_EQ(bk[64], "+Inf 7");
}

TEST(MetricsRender, TwoBucketedKeysAreLabels) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2,bytes_alloc.log2:name=sizes");
  const uint64_t a[] = {1};
  t.table.add(key_of({3, 4}), a);
  EXPECT_NE(metrics_of(t).find("histd_sizes_hitcount_total{bytes_req=\"2^3\",bytes_alloc=\"2^4\"} 1\n"),
            std::string::npos);
}

TEST(MetricsRender, LabelValuesAreEscapedAndUtf8) {
  readout::HistTable t = table_of("hist:keys=comm:name=tasks");
  std::vector<uint8_t> key(16, 0);
  std::memcpy(key.data(), "a\"b\\c\nd\xff", 8);
  const uint64_t a[] = {1};
  t.table.add(key, a);
  EXPECT_NE(metrics_of(t).find("histd_tasks_hitcount_total{comm=\"a\\\"b\\\\c\\nd\xef\xbf\xbd\"} 1\n"),
            std::string::npos)
      << metrics_of(t);
}

TEST(MetricsRender, KernelAddressesAreNeverLabels) {
  readout::HistTable t = table_of("hist:keys=ptr:name=ptrs");
  const uint64_t a[] = {1};
  t.table.add(key_of({0xffff888012345678ull}), a);
  const std::string text = metrics_of(t);
  EXPECT_EQ(text.find("ffff888012345678"), std::string::npos) << text;
  EXPECT_EQ(text.find(std::to_string(0xffff888012345678ull)), std::string::npos) << text;
  EXPECT_NE(text.find("histd_ptrs_hitcount_total{ptr=\"0\"} 1\n"), std::string::npos) << text;
}

// Nothing in a scrape says where kernel addresses lie: not a sum of them
// (hitcount 1 would give the address), nor the bounds of .buckets over
// them, in either format.
TEST(MetricsRender, KernelAddressesAreNeitherSumsNorBucketBounds) {
  constexpr uint64_t kSite = 0xffffffff8163049full;
  readout::HistTable sums = table_of("hist:keys=common_pid:vals=call_site,bytes_req:name=sites");
  const uint64_t a[] = {1, kSite, 64};
  sums.table.add(key_of({11010}), a);
  readout::HistTable buckets = table_of("hist:keys=call_site.buckets=1:name=site_buckets");
  const uint64_t b[] = {3};
  buckets.table.add(key_of({kSite}), b);
  for (const MetricsFormat f : {MetricsFormat::Prometheus, MetricsFormat::OpenMetrics}) {
    const std::string text = metrics_of(sums, {f, 100}) + metrics_of(buckets, {f, 100});
    for (const std::string& leak : {std::to_string(kSite), fmt::format("{}", static_cast<double>(kSite)),
                                    fmt::format("{:x}", kSite), std::string("e+19")})
      EXPECT_EQ(text.find(leak), std::string::npos) << leak << "\n" << text;
    EXPECT_NE(text.find("histd_sites_call_site_total{common_pid=\"11010\"} 0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("histd_sites_bytes_req_total{common_pid=\"11010\"} 64\n"), std::string::npos) << text;
    EXPECT_NE(text.find("histd_site_buckets_call_site_bucket{le=\"0\"} 3\n"), std::string::npos) << text;
  }
}

// Past the cap the kept series are the most-hit ones, whatever order the
// keys came in, and the rest are one overflow series: sum() stays right.
TEST(MetricsRender, PastTheCapTheMostHitAreKeptAndTheRestSummed) {
  for (const bool reversed : {false, true}) {
    readout::HistTable t = table_of("hist:keys=common_pid:vals=bytes_req:name=pids");
    for (uint64_t i = 1; i <= 5; ++i) {
      const uint64_t pid = reversed ? 6 - i : i;
      const uint64_t v[] = {pid, 10 * pid};
      t.table.add(key_of({pid}), v);
    }
    const std::string text = metrics_of(t, {MetricsFormat::Prometheus, 3});
    EXPECT_NE(text.find("histd_pids_hitcount_total{common_pid=\"4\"} 4\n"), std::string::npos) << text;
    EXPECT_NE(text.find("histd_pids_hitcount_total{common_pid=\"5\"} 5\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("{common_pid=\"3\"}"), std::string::npos) << text;
    EXPECT_NE(text.find("histd_pids_hitcount_total{common_pid=\"__overflow__\"} 6\n"), std::string::npos) << text;
    EXPECT_NE(text.find("histd_pids_bytes_req_total{common_pid=\"__overflow__\"} 60\n"), std::string::npos) << text;
    EXPECT_NE(text.find("histd_metrics_series_dropped{table=\"histd_pids\"} 3\n"), std::string::npos) << text;
  }
}

TEST(MetricsRender, PastTheCapAHistogramsRestIsOneOverflowHistogram) {
  readout::HistTable t = table_of("hist:keys=common_pid,bytes_req.log2:name=sizes");
  for (uint64_t pid = 1; pid <= 4; ++pid) {
    const uint64_t v[] = {pid};
    t.table.add(key_of({pid, 3}), v);
  }
  const std::string text = metrics_of(t, {MetricsFormat::Prometheus, 2});
  EXPECT_NE(text.find("histd_sizes_bytes_req_bucket{common_pid=\"4\",le=\"8\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("histd_sizes_bytes_req_bucket{common_pid=\"__overflow__\",le=\"8\"} 6\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("histd_sizes_bytes_req_count{common_pid=\"__overflow__\"} 6\n"), std::string::npos) << text;
}

// As the kernel prints an .execname key: "comm [pid]". A label named for
// the pid holds the pid; the name is a label of its own.
TEST(MetricsRender, AnExecnameKeyKeepsItsPidAndItsName) {
  readout::HistTable t = table_of("hist:keys=common_pid.execname:name=tasks");
  const uint64_t a[] = {3};
  t.table.add(key_of({4242}), a);
  const std::string text = metrics_of(t);
  EXPECT_NE(text.find("histd_tasks_hitcount_total{common_pid=\"4242\",common_pid_comm=\""), std::string::npos) << text;
}

// histd's own families are never a table's: a table named for one gets
// "_table" after its name, and every family is declared once.
TEST(MetricsRender, ATableNeverTakesTheNameOfHistdsOwnFamilies) {
  readout::HistTable t = table_of("hist:keys=common_pid:vals=bytes_req:name=map_memory");
  t.table.vals[1].name = "bytes";
  const uint64_t a[] = {1, 64};
  t.table.add(key_of({7}), a);
  readout::EventHist h{"kmem", "kmalloc", {t}, {}};
  render::DaemonStats d;
  d.map_memory = 4096;
  const std::string text = render::metrics({{"", {h}}}, render::null_resolver(), {}, &d);
  EXPECT_NE(text.find("histd_map_memory_table_bytes_total{common_pid=\"7\"} 64\n"), std::string::npos) << text;
  EXPECT_NE(text.find("histd_map_memory_bytes 4096\n"), std::string::npos) << text;
  std::set<std::string> families;
  for (size_t at = text.find("# TYPE "); at != std::string::npos; at = text.find("# TYPE ", at + 1)) {
    const std::string name = text.substr(at + 7, text.find(' ', at + 7) - at - 7);
    EXPECT_TRUE(families.insert(name).second) << "declared twice: " << name;
  }
}

TEST(MetricsRender, ANamedTableSharedByTriggersIsOneFamily) {
  readout::HistTable t = table_of("hist:keys=common_pid:name=shared");
  readout::EventHist a{"kmem", "kmalloc", {t}, {}}, b{"kmem", "kmalloc", {t}, {}};
  const std::string text = render::metrics({{"", {a, b}}}, render::null_resolver());
  EXPECT_EQ(text.find("# TYPE histd_shared_hitcount_total"), text.rfind("# TYPE histd_shared_hitcount_total"));
}

// An instance's tables join the top tree's families, told apart by a
// tracefs_instance label (the top tree's series have none); one family
// header each, every table's hits in histd_table_hits.
TEST(MetricsRender, AnInstancesTablesCarryItsNameAsALabel) {
  readout::HistTable top = table_of("hist:keys=common_pid");
  readout::HistTable inst = table_of("hist:keys=common_pid");
  const uint64_t one[] = {1}, two[] = {2};
  top.table.add(key_of({7}), one);
  top.table.hits = 1;
  inst.table.add(key_of({7}), two);
  inst.table.hits = 2;
  readout::EventHist a{"kmem", "kmalloc", {top}, {}}, b{"kmem", "kmalloc", {inst}, {}};
  const std::string text = render::metrics({{"", {a}}, {"in\"st", {b}}}, render::null_resolver());
  const std::string family = "histd_kmem_kmalloc_";
  const size_t at = text.find("# TYPE " + family);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(at, text.rfind("# TYPE " + family)) << text;
  EXPECT_NE(text.find("_hitcount_total{common_pid=\"7\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("_hitcount_total{tracefs_instance=\"in\\\"st\",common_pid=\"7\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find(",tracefs_instance=\"in\\\"st\"} 2\n"), std::string::npos) << text;  // histd_table_hits
}

// name= tables are an instance's own: one with other columns than the
// family's (the top tree's) is not exported, and says so.
TEST(MetricsRender, AnInstancesNamedTableOfOtherColumnsIsCountedNotWritten) {
  readout::HistTable top = table_of("hist:keys=common_pid:name=t");
  readout::HistTable inst = table_of("hist:keys=common_pid,bytes_req:name=t");
  const uint64_t one[] = {1};
  top.table.add(key_of({7}), one);
  inst.table.add(key_of({7, 1}), one);
  inst.table.add(key_of({7, 2}), one);
  readout::EventHist a{"kmem", "kmalloc", {top}, {}}, b{"kmem", "kmalloc", {inst}, {}};
  const std::string text = render::metrics({{"", {a}}, {"i", {b}}}, render::null_resolver());
  EXPECT_EQ(text.find("bytes_req=\""), std::string::npos) << text;
  EXPECT_NE(text.find("histd_metrics_series_dropped{table=\"histd_t\",tracefs_instance=\"i\"} 2\n"), std::string::npos)
      << text;
}

TEST(MetricsRender, NoTablesNoFamilies) {
  EXPECT_EQ(render::metrics({}, render::null_resolver()), "");
  EXPECT_EQ(render::metrics({}, render::null_resolver(), {MetricsFormat::OpenMetrics, 1}), "# EOF\n");
}

render::DaemonStats daemon_stats() {
  render::DaemonStats d;
  d.version = "0.1.0";
  d.start_time_seconds = 1700000000.25;
  d.triggers = 3;
  d.max_triggers = 1024;
  d.map_memory = 4096;
  d.max_map_memory = 1 << 20;
  d.missed_events = 7;
  d.ring_lost_trace_records = 2;
  d.compiles_by_server = 5;
  d.compiles_by_clang = 1;
  d.compiler_starts = 1;
  d.activation_bounds = {0.01, 0.1};
  d.activation_counts = {2, 1, 1};  // the last past 0.1 s
  d.activation_sum_seconds = 0.75;
  d.scrape_seconds = 0.0125;
  return d;
}

TEST(MetricsRender, HistdItselfAfterTheTables) {
  const render::DaemonStats d = daemon_stats();
  const std::string text = render::metrics({}, render::null_resolver(), {}, &d);
  for (const char* line :
       {"histd_build_info{version=\"0.1.0\"} 1\n", "histd_start_time_seconds 1700000000.250\n", "histd_triggers 3\n",
        "histd_triggers_limit 1024\n", "histd_map_memory_bytes 4096\n", "histd_map_memory_limit_bytes 1048576\n",
        "# TYPE histd_missed_events_total counter\nhistd_missed_events_total 7\n",
        "histd_ring_lost_total{kind=\"trace_records\"} 2\n", "histd_ring_lost_total{kind=\"snapshot_notices\"} 0\n",
        "histd_compiles_total{by=\"histd-cc\"} 5\n", "histd_compiles_total{by=\"clang\"} 1\n",
        "histd_compiler_starts_total 1\n", "histd_scrape_duration_seconds 0.012500\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  // Cumulative buckets, +Inf the count.
  EXPECT_NE(text.find("# TYPE histd_activation_seconds histogram\n"
                      "histd_activation_seconds_bucket{le=\"0.01\"} 2\n"
                      "histd_activation_seconds_bucket{le=\"0.1\"} 3\n"
                      "histd_activation_seconds_bucket{le=\"+Inf\"} 4\n"
                      "histd_activation_seconds_count 4\nhistd_activation_seconds_sum 0.750000\n"),
            std::string::npos)
      << text;
}

TEST(MetricsRender, HistdItselfComesBeforeOpenMetricsEof) {
  const render::DaemonStats d = daemon_stats();
  const std::string text = render::metrics({}, render::null_resolver(), {MetricsFormat::OpenMetrics, 1}, &d);
  EXPECT_NE(text.find("# TYPE histd_missed_events counter\nhistd_missed_events_total 7\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE histd_compiles counter\n"), std::string::npos);
  EXPECT_TRUE(text.ends_with("histd_scrape_duration_seconds 0.012500\n# EOF\n")) << text;
}

}  // namespace
}  // namespace histd
