// SPDX-License-Identifier: GPL-2.0-only
// The page's latency heatmap (render::page with a history,
// render::histogram_totals): a cell per bucket and interval with hits, its
// count and time in its <title>, the lowest bucket at the bottom, time
// left to right; tables without a history or a histogram key get none.
// Without root.
#include <gtest/gtest.h>

#include "histd/readout.h"
#include "histd/render.h"
#include "table_support.h"

namespace histd {
namespace {

using testing::key_of;
using testing::table_of;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The attribute `name` ("x", "y") of the cell whose title ends with `title_end`.
int cell_attr(const std::string& page, const std::string& title_end, const std::string& name) {
  const size_t t = page.find(title_end + "</title>");
  const size_t cell = page.rfind("<rect class=\"cell\"", t);
  const size_t a = page.find(" " + name + "=\"", cell);
  return t == std::string::npos || cell == std::string::npos ? -1 : std::stoi(page.substr(a + name.size() + 3));
}

std::string page_with(const readout::HistTable& t, std::vector<render::TableHistory> history) {
  readout::EventHist h{"sched", "sched_switch", {t}, {}};
  return render::page({h}, render::null_resolver(), {}, history);
}

// Latency that moves from bucket 2^4 to 2^10 halfway: the cells move up.
TEST(PageHeatmap, CellsMoveWithTheBucketOverTime) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {5};
  t.table.add(key_of({4}), a);
  render::TableHistory h{"sched:sched_switch", t.plan.trigger_text(), 10, {}};
  for (uint64_t i = 0; i < 6; ++i) h.intervals.push_back({{i < 3 ? 4 : 10, 100 + i}});
  const std::string page = page_with(t, {h});
  EXPECT_EQ(count(page, "<rect class=\"cell\""), 6u) << page;
  EXPECT_NE(page.find("<title>bytes_req ~ 2^4 (9-16), -1m to -50s: 100</title>"), std::string::npos) << page;
  EXPECT_NE(page.find("<title>bytes_req ~ 2^10 (513-1024), -10s to now: 105</title>"), std::string::npos) << page;
  // Later intervals to the right; the higher bucket above (smaller y).
  EXPECT_LT(cell_attr(page, "-1m to -50s: 100", "x"), cell_attr(page, "-10s to now: 105", "x"));
  EXPECT_GT(cell_attr(page, "-1m to -50s: 100", "y"), cell_attr(page, "-10s to now: 105", "y"));
  // Every bucket between, empty ones included, is a labelled row.
  for (const char* row : {">9-16</text>", ">17-32</text>", ">257-512</text>", ">513-1024</text>"})
    EXPECT_NE(page.find(row), std::string::npos) << row;
  EXPECT_NE(page.find("bytes_req over time, every 10 s"), std::string::npos);
  // The heatmap comes before the bar chart.
  EXPECT_LT(page.find("class=\"heatmap\""), page.find("class=\"chart\""));
}

TEST(PageHeatmap, NoHistoryOrAnotherTableMakesNoHeatmap) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {1};
  t.table.add(key_of({4}), a);
  EXPECT_EQ(page_with(t, {}).find("heatmap"), std::string::npos);
  render::TableHistory other{"sched:sched_switch", "hist:keys=other.log2", 10, {{{4, 1}}}};
  EXPECT_EQ(page_with(t, {other}).find("heatmap"), std::string::npos);
  render::TableHistory quiet{"sched:sched_switch", t.plan.trigger_text(), 10, {{}, {}}};
  EXPECT_NE(page_with(t, {quiet}).find("No hits in the last intervals"), std::string::npos);
}

TEST(PageHeatmap, TheBusiestCellIsDarkest) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {1};
  t.table.add(key_of({4}), a);
  render::TableHistory h{"sched:sched_switch", t.plan.trigger_text(), 10, {{{4, 1}}, {{4, 1000}}}};
  const std::string page = page_with(t, {h});
  EXPECT_NE(page.find("fill=\"#b4140a\"><title>bytes_req ~ 2^4 (9-16), -10s to now: 1000"), std::string::npos) << page;
}

TEST(PageHeatmap, HistogramTotalsMergeLabelSetsAndHideAddresses) {
  readout::HistTable t = table_of("hist:keys=common_pid,bytes_req.log2");
  const uint64_t a[] = {3}, b[] = {4};
  t.table.add(key_of({1, 4}), a);
  t.table.add(key_of({2, 4}), b);
  t.table.add(key_of({2, 10}), a);
  const auto totals = render::histogram_totals(t.table);
  ASSERT_TRUE(totals);
  EXPECT_EQ(*totals, (std::map<uint64_t, uint64_t>{{4, 7}, {10, 3}}));
  EXPECT_FALSE(render::histogram_totals(table_of("hist:keys=common_pid").table));
  readout::HistTable sites = table_of("hist:keys=call_site.buckets=1");
  const uint64_t one[] = {1};
  sites.table.add(key_of({0xffffffff8163049full}), one);
  sites.table.add(key_of({0xffffffff8163149full}), one);
  EXPECT_EQ(*render::histogram_totals(sites.table), (std::map<uint64_t, uint64_t>{{0, 2}}));
}

}  // namespace
}  // namespace histd
