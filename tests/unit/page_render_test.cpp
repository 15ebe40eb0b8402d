// SPDX-License-Identifier: GPL-2.0-only
// Every table as an HTML page (render::page, docs/metrics.md "The page"):
// escaping of every user text, one bar per non-empty bucket with its bounds
// and count, a chart per label set, empty tables, tables without a bucket
// key, the caps, and that the page loads nothing. Without root.
#include <gtest/gtest.h>

#include <cstring>

#include "histd/readout.h"
#include "histd/render.h"
#include "table_support.h"

namespace histd {
namespace {

using testing::key_of;
using testing::table_of;

std::string page_of(const readout::HistTable& t, render::PageOptions o = {}) {
  readout::EventHist h{"kmem", "kmalloc", {t}, {}};
  return render::page({h}, render::null_resolver(), o);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// A key of `t` whose first key, a comm (char[16]), holds `text` (at most 16
// bytes) and whose second, if any, is `number`.
std::vector<uint8_t> comm_key(const table::Table& t, const std::string& text, uint64_t number = 0) {
  std::vector<uint8_t> key(t.key_size, 0);
  std::memcpy(key.data() + t.keys[0].offset, text.data(), std::min<size_t>(text.size(), 16));
  if (t.keys.size() > 1) std::memcpy(key.data() + t.keys[1].offset, &number, 8);
  return key;
}

TEST(PageRender, ADocumentThatLoadsNothingAndReloadsItself) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {1};
  t.table.add(key_of({3}), a);
  const std::string page = page_of(t, {7, 20, 200, 50});
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")) << page;
  EXPECT_NE(page.find("<meta http-equiv=\"refresh\" content=\"7\">"), std::string::npos);
  EXPECT_NE(page.find("this page reloads every 7 s"), std::string::npos);
  EXPECT_TRUE(page.ends_with("</body>\n</html>\n"));
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  // Its only links are to itself: the other y scale.
  EXPECT_EQ(count(page, "href="), 1u);
  EXPECT_EQ(count(page, "href=\"?scale=log\""), 1u);
  EXPECT_EQ(page.find("url("), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
}

TEST(PageRender, EventTriggerLineAndTotals) {
  readout::HistTable t = table_of("hist:keys=common_pid:vals=bytes_req");
  const uint64_t a[] = {3, 300};
  t.table.add(key_of({7}), a);
  t.table.hits = 4;
  t.table.drops = 2;
  t.missed = 5;
  t.paused = true;
  const std::string page = page_of(t);
  EXPECT_NE(page.find("<h2>kmem:kmalloc</h2>"), std::string::npos) << page;
  EXPECT_NE(page.find("<pre class=\"trigger\">" + t.plan.trigger_text() + " [paused]</pre>"), std::string::npos);
  EXPECT_NE(page.find("Hits: 4 &middot; Entries: 1 &middot; Dropped: 2 &middot; Missed: 5"), std::string::npos);
}

TEST(PageRender, EveryUserTextIsEscaped) {
  readout::HistTable rows = table_of("hist:keys=comm if comm == \"<i>\"");
  readout::HistTable chart = table_of("hist:keys=comm,bytes_req.log2");
  const uint64_t a[] = {1};
  rows.table.add(comm_key(rows.table, "<script>alert(1)"), a);
  chart.table.add(comm_key(chart.table, "<b>x</b>&'\"", 3), a);
  readout::EventHist h{"k<m>", "e&v", {rows, chart}, {}};
  const std::string page = render::page({h}, render::null_resolver());
  EXPECT_NE(page.find("<h2>k&lt;m&gt;:e&amp;v</h2>"), std::string::npos) << page;
  EXPECT_NE(page.find("if comm == &quot;&lt;i&gt;&quot;"), std::string::npos) << page;
  EXPECT_NE(page.find("comm: &lt;script&gt;alert(1)"), std::string::npos) << page;
  EXPECT_NE(page.find("<figcaption>comm: &lt;b&gt;x&lt;/b&gt;&amp;&#39;&quot; "), std::string::npos) << page;
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<b>"), std::string::npos);
  EXPECT_EQ(page.find("<i>"), std::string::npos);
}

TEST(PageRender, TextIsMadeValidUtf8) {
  readout::HistTable t = table_of("hist:keys=comm");
  const uint64_t a[] = {1};
  t.table.add(comm_key(t.table, "a\xff"), a);
  EXPECT_NE(page_of(t).find("a\xef\xbf\xbd"), std::string::npos);
}

TEST(PageRender, OneBarPerNonEmptyLog2BucketWithItsBoundsAndCount) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  // Buckets 2^3 = (4, 8] and 2^5 = (16, 32]; 2^4 between them is a gap.
  const uint64_t b3[] = {2}, b5[] = {1};
  t.table.add(key_of({5}), b5);
  t.table.add(key_of({3}), b3);
  const std::string page = page_of(t);
  EXPECT_EQ(count(page, "<svg"), 1u) << page;
  EXPECT_EQ(count(page, "<rect"), 2u);
  EXPECT_NE(page.find("<title>bytes_req ~ 2^3 (5-8): 2</title>"), std::string::npos) << page;
  EXPECT_NE(page.find("<title>bytes_req ~ 2^5 (17-32): 1</title>"), std::string::npos);
  // The axis: each bucket's bounds, the empty one too.
  EXPECT_NE(page.find(">5-8</text>"), std::string::npos);
  EXPECT_NE(page.find(">9-16</text>"), std::string::npos);
  EXPECT_NE(page.find(">17-32</text>"), std::string::npos);
  EXPECT_NE(page.find("<figcaption>all entries <span class=\"note\">(3 hits)</span>"), std::string::npos);
  // The fuller bucket is the full height; the other half of it.
  EXPECT_NE(page.find("height=\"160\"><title>bytes_req ~ 2^3"), std::string::npos);
  EXPECT_NE(page.find("height=\"80\"><title>bytes_req ~ 2^5"), std::string::npos);
}

TEST(PageRender, Log2BucketsZeroAndOneHoldTheirValues) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {1};
  t.table.add(key_of({0}), a);
  t.table.add(key_of({1}), a);
  const std::string page = page_of(t);
  EXPECT_NE(page.find("<title>bytes_req ~ 2^0 (0-1): 1</title>"), std::string::npos) << page;
  EXPECT_NE(page.find("<title>bytes_req ~ 2^1 (2): 1</title>"), std::string::npos) << page;
}

TEST(PageRender, LinearBucketsWithFewGapsAreDrawnWithTheirGaps) {
  readout::HistTable t = table_of("hist:keys=bytes_req.buckets=100");
  const uint64_t a[] = {4}, b[] = {1};
  t.table.add(key_of({200}), a);
  t.table.add(key_of({0}), b);
  const std::string page = page_of(t);
  EXPECT_EQ(count(page, "<rect"), 2u) << page;
  EXPECT_NE(page.find("<title>bytes_req ~ 200-299 (200-299): 4</title>"), std::string::npos) << page;
  EXPECT_NE(page.find(">0-99</text>"), std::string::npos);
  EXPECT_NE(page.find(">100-199</text>"), std::string::npos);
  EXPECT_NE(page.find(">200-299</text>"), std::string::npos);
}

TEST(PageRender, SparseLinearBucketsAreDrawnWithoutTheirGaps) {
  readout::HistTable t = table_of("hist:keys=bytes_req.buckets=10");
  const uint64_t a[] = {1};
  t.table.add(key_of({0}), a);
  t.table.add(key_of({10000}), a);
  const std::string page = page_of(t);
  EXPECT_EQ(count(page, "<rect"), 2u);
  EXPECT_EQ(count(page, "transform=\"rotate("), 2u) << "a label per drawn bucket, no gap slots\n" << page;
  EXPECT_NE(page.find(">10000-10009</text>"), std::string::npos);
}

TEST(PageRender, AChartPerLabelSetMostHitsFirst) {
  readout::HistTable t = table_of("hist:keys=common_pid,bytes_req.log2");
  const uint64_t a[] = {1}, b[] = {2}, c[] = {4};
  t.table.add(key_of({7, 3}), a);
  t.table.add(key_of({7, 4}), b);
  t.table.add(key_of({9, 4}), c);
  const std::string page = page_of(t);
  EXPECT_EQ(count(page, "<svg"), 2u) << page;
  EXPECT_EQ(count(page, "<rect"), 3u);
  const size_t nine = page.find("<figcaption>common_pid: 9 <span class=\"note\">(4 hits)</span>");
  const size_t seven = page.find("<figcaption>common_pid: 7 <span class=\"note\">(3 hits)</span>");
  ASSERT_NE(nine, std::string::npos) << page;
  ASSERT_NE(seven, std::string::npos) << page;
  EXPECT_LT(nine, seven);
  EXPECT_EQ(count(page.substr(seven), "<rect"), 2u);
}

TEST(PageRender, ChartsPastTheCapAreCounted) {
  readout::HistTable t = table_of("hist:keys=common_pid,bytes_req.log2");
  const uint64_t a[] = {1};
  for (uint64_t pid = 1; pid <= 5; ++pid) t.table.add(key_of({pid, 3}), a);
  const std::string page = page_of(t, {5, 2, 200, 50});
  EXPECT_EQ(count(page, "<svg"), 2u);
  EXPECT_NE(page.find("3 more label sets not shown"), std::string::npos) << page;
  EXPECT_EQ(page_of(t).find("more label sets"), std::string::npos);
}

TEST(PageRender, BarsPastTheCapAreCounted) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {1};
  for (uint64_t v = 1; v <= 6; ++v) t.table.add(key_of({v}), a);
  const std::string page = page_of(t, {5, 20, 4, 50});
  EXPECT_EQ(count(page, "<rect"), 4u);
  EXPECT_NE(page.find("2 more non-empty buckets not drawn"), std::string::npos) << page;
}

TEST(PageRender, ATableWithoutABucketKeyListsItsEntries) {
  readout::HistTable t = table_of("hist:keys=common_pid:vals=bytes_req");
  const uint64_t a[] = {3, 300};
  t.table.add(key_of({7}), a);
  const std::string page = page_of(t);
  EXPECT_EQ(page.find("<svg"), std::string::npos) << page;
  EXPECT_NE(page.find("<pre class=\"entries\">" + render::render_row(t.table, 0, render::null_resolver()) + "\n</pre>"),
            std::string::npos)
      << page;
}

// The default sort (hitcount ascending) puts the most hit entries last:
// the page shows those, in the hist file's order, and counts the rest.
TEST(PageRender, TheMostHitEntriesOfAnAscendingSortAreShown) {
  readout::HistTable t = table_of("hist:keys=common_pid");
  for (uint64_t pid = 1; pid <= 5; ++pid) {
    const uint64_t a[] = {pid * 10};
    t.table.add(key_of({pid}), a);
  }
  table::sort_rows(t.table);
  const std::string page = page_of(t, {5, 20, 200, 3});
  EXPECT_EQ(count(page, "common_pid: "), 3u) << page;
  EXPECT_EQ(page.find("hitcount:         10"), std::string::npos) << page;
  const size_t p3 = page.find("hitcount:         30"), p5 = page.find("hitcount:         50");
  ASSERT_NE(p3, std::string::npos) << page;
  ASSERT_NE(p5, std::string::npos);
  EXPECT_LT(p3, p5);  // the hist file's order
  EXPECT_NE(page.find("2 more entries, 30 hits, not shown: the hist file has every entry."), std::string::npos);
}

TEST(PageRender, TheFirstEntriesOfADescendingSortAreShown) {
  readout::HistTable t = table_of("hist:keys=common_pid:sort=hitcount.descending");
  for (uint64_t pid = 1; pid <= 5; ++pid) {
    const uint64_t a[] = {pid * 10};
    t.table.add(key_of({pid}), a);
  }
  table::sort_rows(t.table);
  const std::string page = page_of(t, {5, 20, 200, 2});
  EXPECT_EQ(count(page, "common_pid: "), 2u) << page;
  const size_t p5 = page.find("hitcount:         50"), p4 = page.find("hitcount:         40");
  ASSERT_NE(p5, std::string::npos) << page;
  ASSERT_NE(p4, std::string::npos);
  EXPECT_LT(p5, p4);
  EXPECT_NE(page.find("3 more entries, 60 hits, not shown"), std::string::npos) << page;
}

TEST(PageRender, AllEntriesWithinTheCapAreShownWithoutANote) {
  readout::HistTable t = table_of("hist:keys=common_pid");
  const uint64_t a[] = {1};
  for (uint64_t pid = 1; pid <= 3; ++pid) t.table.add(key_of({pid}), a);
  const std::string page = page_of(t, {5, 20, 200, 3});
  EXPECT_EQ(count(page, "common_pid: "), 3u) << page;
  EXPECT_EQ(page.find("more entries"), std::string::npos);
}

TEST(PageRender, TwoBucketKeysMakeNoChart) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2,bytes_alloc.log2");
  const uint64_t a[] = {1};
  t.table.add(key_of({3, 4}), a);
  const std::string page = page_of(t);
  EXPECT_EQ(page.find("<svg"), std::string::npos) << page;
  EXPECT_NE(page.find("<pre class=\"entries\">"), std::string::npos);
}

TEST(PageRender, EntriesHideKernelAddresses) {
  readout::HistTable t = table_of("hist:keys=ptr");
  const uint64_t a[] = {1};
  t.table.add(key_of({0xffff888012345678ull}), a);
  const std::string page = page_of(t);
  EXPECT_EQ(page.find("ffff888012345678"), std::string::npos) << page;
}

TEST(PageRender, BucketsOfKernelAddressesShowNoBounds) {
  constexpr uint64_t kSite = 0xffffffff8163049full;
  readout::HistTable t = table_of("hist:keys=call_site.buckets=1");
  const uint64_t a[] = {4}, b[] = {2};
  t.table.add(key_of({kSite}), a);
  t.table.add(key_of({kSite + 4096}), b);
  const std::string page = page_of(t);
  for (const std::string& leak : {std::to_string(kSite), std::to_string(kSite + 4096), std::string("e+19")})
    EXPECT_EQ(page.find(leak), std::string::npos) << leak << "\n" << page;
  // Both in the one bucket every hidden address falls in.
  EXPECT_NE(page.find("<title>call_site ~ 0-0 (0): 6</title>"), std::string::npos) << page;
}

TEST(PageRender, EmptyTablesAndNoTables) {
  const std::string page = page_of(table_of("hist:keys=bytes_req.log2"));
  EXPECT_NE(page.find("Hits: 0 &middot; Entries: 0"), std::string::npos) << page;
  EXPECT_NE(page.find("No entries yet."), std::string::npos);
  EXPECT_EQ(page.find("<svg"), std::string::npos);
  const std::string none = render::page({}, render::null_resolver());
  EXPECT_NE(none.find("0 hist tables"), std::string::npos) << none;
  EXPECT_NE(none.find("No hist triggers"), std::string::npos);
  EXPECT_EQ(none.find("<section"), std::string::npos);
}

// Every bucket is labelled, however many: a chart of 41 log2 buckets has
// 41 labels, 16 px or more apart.
TEST(PageRender, EveryBucketIsLabelled) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t a[] = {1};
  t.table.add(key_of({0}), a);
  t.table.add(key_of({40}), a);
  const std::string page = page_of(t);
  EXPECT_EQ(count(page, "<text class=\"bucket\""), 41u) << page;
  EXPECT_NE(page.find(">549755813889-1099511627776</text>"), std::string::npos) << page;
  std::vector<int> xs;
  for (size_t at = page.find("<text class=\"bucket\" x=\""); at != std::string::npos;
       at = page.find("<text class=\"bucket\" x=\"", at + 1))
    xs.push_back(std::stoi(page.substr(at + 24)));
  for (size_t i = 1; i < xs.size(); ++i) EXPECT_GE(xs[i] - xs[i - 1], 16);
}

// height="N" of the bar whose title ends ": HITS".
int bar_height(const std::string& page, const std::string& title_end) {
  const size_t t = page.find(title_end + "</title>");
  const size_t h = page.rfind("height=\"", t);
  return t == std::string::npos || h == std::string::npos ? -1 : std::stoi(page.substr(h + 8));
}

TEST(PageRender, LinearAndLogScales) {
  readout::HistTable t = table_of("hist:keys=bytes_req.log2");
  const uint64_t big[] = {10000}, small[] = {10};
  t.table.add(key_of({3}), big);
  t.table.add(key_of({6}), small);
  const std::string linear = page_of(t);
  EXPECT_EQ(bar_height(linear, ": 10000"), 160);
  EXPECT_EQ(bar_height(linear, ": 10"), 1) << linear;  // 10/10000 of 160 px, at least 1
  render::PageOptions o;
  o.scale = render::PageScale::Log;
  const std::string log = page_of(t, o);
  EXPECT_EQ(bar_height(log, ": 10000"), 160);
  EXPECT_EQ(bar_height(log, ": 10"), 42) << log;  // log10(11)/log10(10001) of 160 px
  // Ticks at the powers of ten; the link back to the linear scale.
  for (const char* tick : {">1</text>", ">10</text>", ">100</text>", ">1000</text>", ">10000</text>"})
    EXPECT_NE(log.find(tick), std::string::npos) << tick;
  EXPECT_NE(log.find("<a href=\"?scale=linear\">linear</a> | <span class=\"current\">log</span>"), std::string::npos);
  EXPECT_NE(linear.find("<span class=\"current\">linear</span> | <a href=\"?scale=log\">log</a>"), std::string::npos);
}

}  // namespace
}  // namespace histd
