// SPDX-License-Identifier: GPL-2.0-only
// The page's bar charts (render::page, docs/metrics.md "The page"): one
// per label set of a histogram table, every bucket labelled with its
// bounds, on a linear or a log y scale.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "render/key_formats.h"
#include "render/labels.h"
#include "render/page_parts.h"

namespace histd::render {

namespace {

// One label set of a histogram table: its hits per bucket.
struct Chart {
  std::string caption;  // "common_pid: 7, comm: bash", unescaped
  uint64_t hits = 0;
  std::map<uint64_t, uint64_t> buckets;  // the key's bucket -> hits
};

std::vector<Chart> charts_of(const table::Table& tab, size_t hist_key, const Resolver& res) {
  std::map<std::vector<std::string>, Chart> sets;
  const table::KeyColumn& k = tab.keys[hist_key];
  for (size_t e = 0; e < tab.entries(); ++e) {
    const table::Row r = tab.row(e);
    std::vector<std::string> labels;
    for (size_t i = 0; i < tab.keys.size(); ++i)
      if (i != hist_key) labels.push_back(key_caption(tab.keys[i], r, res));
    Chart& c = sets[labels];
    const uint64_t hits = r.vals.empty() ? 0 : r.vals[0];
    c.hits += hits;
    c.buckets[shown(r.key_number(k.offset), k.address, Options{true})] += hits;
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < tab.keys.size(); ++i)
    if (i != hist_key) names.push_back(tab.keys[i].name);
  std::vector<Chart> charts;
  for (auto& [labels, c] : sets) {
    for (size_t l = 0; l < labels.size(); ++l) c.caption += fmt::format("{}{}: {}", l ? ", " : "", names[l], labels[l]);
    if (c.caption.empty()) c.caption = "all entries";
    charts.push_back(std::move(c));
  }
  std::stable_sort(charts.begin(), charts.end(), [](const Chart& a, const Chart& b) { return a.hits > b.hits; });
  return charts;
}

// The chart's x axis: every bucket from the lowest to the highest non-empty
// one (empty ones as gaps, so the shape is true) where the display's format
// fills gaps (.log2, which has at most 65), or when there are few enough
// (.buckets); else the non-empty buckets alone. Hits 0 marks a gap.
constexpr uint64_t kMaxGapFill = 64;
std::vector<std::pair<uint64_t, uint64_t>> slots_of(const table::KeyColumn& k, const Chart& c) {
  std::vector<std::pair<uint64_t, uint64_t>> slots;
  if (c.buckets.empty()) return slots;
  const KeyFormat& format = key_format(k.display);
  const uint64_t step = format.step(k);
  const uint64_t lo = c.buckets.begin()->first, hi = c.buckets.rbegin()->first;
  bool fill = format.fills_gaps || (hi - lo) / step < kMaxGapFill;
  for (const auto& b : c.buckets) fill = fill && (b.first - lo) % step == 0;
  if (!fill) return {c.buckets.begin(), c.buckets.end()};
  for (uint64_t v = lo;; v += step) {
    auto it = c.buckets.find(v);
    slots.emplace_back(v, it == c.buckets.end() ? 0 : it->second);
    if (hi - v < step) break;
  }
  return slots;
}

// The y axis: where a count's bar ends, 0 (the axis) to 1 (the chart's
// fullest bucket). On the log scale a bucket of 1 hit still shows, next to
// one of a million: the tails of a latency distribution are what a person
// looks for, and a linear scale flattens them to nothing.
double y_of(uint64_t hits, uint64_t most, PageScale scale) {
  if (scale == PageScale::Log)
    return std::log10(1.0 + static_cast<double>(hits)) / std::log10(1.0 + static_cast<double>(most));
  return static_cast<double>(hits) / static_cast<double>(most);
}

// The y axis's ticks: 0 and the fullest count on the linear scale; each
// power of ten up to the fullest count, and that, on the log scale.
std::string y_ticks(uint64_t most, PageScale scale, int left, int top, int plot) {
  std::vector<uint64_t> ticks{0, most};
  if (scale == PageScale::Log)
    for (uint64_t p = 1; p < most && ticks.size() < 22; p *= 10)
      if (y_of(most, most, scale) - y_of(p, most, scale) > 0.08) ticks.push_back(p);
  std::string out;
  for (uint64_t t : ticks) {
    const int y = top + plot - static_cast<int>(y_of(t, most, scale) * plot + 0.5);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", left - 4, y + (t ? 4 : 0), t);
    if (t)
      out += fmt::format("<line class=\"tick\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", left - 3, y, left - 1, y);
  }
  return out + "\n";
}

// Every bucket is labelled, rotated -45 degrees: slots at least 16 px wide
// keep neighbouring labels (10 px text) apart, and the space under the axis
// fits the longest label.
struct ChartGeometry {
  int slot, width, height, plot = 160, left = 64, top = 12, bottom;
};
ChartGeometry geometry_of(const table::KeyColumn& k, const std::vector<std::pair<uint64_t, uint64_t>>& slots) {
  const int n = static_cast<int>(std::max<size_t>(slots.size(), 1));
  size_t longest = 1;
  for (const auto& s : slots) longest = std::max(longest, range_text(k, s.first).size());
  ChartGeometry g{};
  g.slot = std::clamp(640 / n, 16, 32);
  g.bottom = 24 + static_cast<int>(static_cast<double>(longest) * 6.1 * 0.71);
  g.width = g.left + n * g.slot + 8;
  g.height = g.top + g.plot + g.bottom;
  return g;
}

// A bar chart: a <rect class="bar"> per non-empty bucket, its count in its
// <title>; under the axis each bucket's bounds.
std::string svg_chart(const table::KeyColumn& k, const Chart& c, const PageOptions& o) {
  auto slots = slots_of(k, c);
  size_t cut = 0;  // non-empty buckets past max_bars
  if (slots.size() > o.max_bars) {
    for (size_t i = o.max_bars; i < slots.size(); ++i) cut += slots[i].second ? 1 : 0;
    slots.resize(o.max_bars);
  }
  uint64_t most = 1;
  for (const auto& s : slots) most = std::max(most, s.second);
  const ChartGeometry g = geometry_of(k, slots);
  std::string out = fmt::format(
      "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2} per {3} bucket\">\n",
      g.width, g.height, html(c.caption), html(k.name));
  out += fmt::format(
      "<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
      "<line class=\"axis\" x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\"/>\n",
      g.left - 1, g.top, g.top + g.plot, g.width - 4);
  out += y_ticks(most, o.scale, g.left, g.top, g.plot);
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto [v, hits] = slots[i];
    const int x = g.left + static_cast<int>(i) * g.slot;
    if (hits) {
      const int h = std::max(1, static_cast<int>(y_of(hits, most, o.scale) * g.plot + 0.5));
      out += fmt::format(
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{} ~ {} ({}): {}"
          "</title></rect>\n",
          x, g.top + g.plot - h, g.slot - 2, h, html(k.name), bucket_label(k, v), range_text(k, v), hits);
    }
    const int lx = x + g.slot / 2, ly = g.top + g.plot + 10;
    out += fmt::format(
        "<text class=\"bucket\" x=\"{0}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-45 {0} {1})\">{2}"
        "</text>\n",
        lx, ly, range_text(k, v));
  }
  out += "</svg>";
  if (cut) out += fmt::format("<p class=\"note\">{} more non-empty buckets not drawn.</p>", cut);
  return out;
}

}  // namespace

std::string range_text(const table::KeyColumn& k, uint64_t v) {
  const BucketBounds b = bucket_bounds(k, v);
  return b.lower == b.upper ? bound_text(b.upper) : bound_text(b.lower) + "-" + bound_text(b.upper);
}

std::string charts_html(const table::Table& tab, size_t hist_key, const Resolver& res, const PageOptions& o) {
  const std::vector<Chart> charts = charts_of(tab, hist_key, res);
  std::string out;
  for (size_t i = 0; i < charts.size() && i < o.max_charts; ++i)
    out += fmt::format("<figure><figcaption>{} <span class=\"note\">({} hits)</span></figcaption>\n{}</figure>\n",
                       html(charts[i].caption), charts[i].hits, svg_chart(tab.keys[hist_key], charts[i], o));
  if (charts.size() > o.max_charts)
    out += fmt::format("<p class=\"note\">{} more label sets not shown (the hist file has every entry).</p>\n",
                       charts.size() - o.max_charts);
  return out;
}

}  // namespace histd::render
