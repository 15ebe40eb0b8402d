// SPDX-License-Identifier: GPL-2.0-only
// The page's latency heatmap (render::page, docs/metrics.md "The page"), as
// Brendan Gregg draws them: x is time, one column an interval; y is the
// histogram key's bucket, lowest at the bottom; a cell's colour is how many
// hits the bucket gained in that interval. A change in latency shows as
// cells moving up or down the columns, which a bar chart of the totals
// since the trigger's start cannot show.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "render/key_formats.h"
#include "render/labels.h"
#include "render/page_parts.h"

namespace histd::render {

namespace {

// The rows: every bucket from the lowest to the highest the history holds,
// gaps included where the key's format fills them (as the bar charts do);
// else the buckets that had hits.
constexpr uint64_t kMaxRows = 128;
std::vector<uint64_t> rows_of(const table::KeyColumn& k, const TableHistory& h) {
  std::map<uint64_t, bool> seen;
  for (const auto& in : h.intervals)
    for (const auto& [b, hits] : in)
      if (hits) seen[b] = true;
  std::vector<uint64_t> rows;
  if (seen.empty()) return rows;
  const KeyFormat& format = key_format(k.display);
  const uint64_t step = std::max<uint64_t>(1, format.step(k));
  const uint64_t lo = seen.begin()->first, hi = seen.rbegin()->first;
  bool fill = (format.fills_gaps || (hi - lo) / step < kMaxRows);
  for (const auto& s : seen) fill = fill && (s.first - lo) % step == 0;
  if (!fill) {
    for (const auto& s : seen) rows.push_back(s.first);
  } else {
    for (uint64_t v = lo; rows.size() < kMaxRows; v += step) {
      rows.push_back(v);
      if (hi - v < step) break;
    }
  }
  if (rows.size() > kMaxRows) rows.resize(kMaxRows);
  return rows;
}

// White for none, then from pale yellow to dark red on a log scale of the
// count: one hit must show, and the busiest cell must not wash out the rest.
std::string colour_of(uint64_t hits, uint64_t most) {
  if (!hits) return "#ffffff";
  const double f = most <= 1 ? 1.0 : std::log1p(static_cast<double>(hits)) / std::log1p(static_cast<double>(most));
  const int r = static_cast<int>(255 - 75 * f), g = static_cast<int>(235 - 215 * f),
            b = static_cast<int>(160 - 150 * f);
  return fmt::format("#{:02x}{:02x}{:02x}", r, g, b);
}

// How long before now an interval ended: "now", "-30s", "-5m".
std::string ago(uint64_t seconds) {
  if (seconds == 0) return "now";
  return seconds % 60 == 0 ? fmt::format("-{}m", seconds / 60) : fmt::format("-{}s", seconds);
}

}  // namespace

std::string heatmap_html(const table::KeyColumn& k, const TableHistory& h) {
  const std::vector<uint64_t> rows = rows_of(k, h);
  if (rows.empty()) return "<p class=\"note\">No hits in the last intervals: the heatmap is empty.</p>\n";
  const int cell_w = 10, cell_h = 12, left = 150, top = 8, bottom = 28;
  const int n = static_cast<int>(h.intervals.size()), m = static_cast<int>(rows.size());
  const int width = left + n * cell_w + 16, height = top + m * cell_h + bottom;
  uint64_t most = 1;
  for (const auto& in : h.intervals)
    for (const auto& [b, hits] : in) most = std::max(most, hits);
  std::string out = fmt::format(
      "<figure class=\"heatmap\"><figcaption>{} over time, every {} s <span class=\"note\">(hits per bucket and "
      "interval, all label sets)</span></figcaption>\n<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{} per interval\">\n",
      html(k.name), h.interval_seconds, width, height, width, height, html(k.name));
  for (int r = 0; r < m; ++r) {
    const int y = top + (m - 1 - r) * cell_h;  // the lowest bucket at the bottom
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4, y + cell_h - 2,
                       range_text(k, rows[static_cast<size_t>(r)]));
  }
  for (int c = 0; c < n; ++c) {
    const auto& in = h.intervals[static_cast<size_t>(c)];
    const uint64_t end = static_cast<uint64_t>(n - 1 - c) * h.interval_seconds;
    for (int r = 0; r < m; ++r) {
      const uint64_t b = rows[static_cast<size_t>(r)];
      const auto it = in.find(b);
      const uint64_t hits = it == in.end() ? 0 : it->second;
      if (!hits) continue;
      out += fmt::format(
          "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} ~ {} ({}), "
          "{} to {}: {}</title></rect>\n",
          left + c * cell_w, top + (m - 1 - r) * cell_h, cell_w, cell_h, colour_of(hits, most), html(k.name),
          bucket_label(k, b), range_text(k, b), ago(end + h.interval_seconds), ago(end), hits);
    }
  }
  const int axis_y = top + m * cell_h;
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", left, axis_y,
                     left + n * cell_w);
  // Time labels 60 px or more apart, so that none overlaps the next.
  for (int c = 0; c <= n; c += std::max(6, n / 6))
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + c * cell_w, axis_y + 14,
                       ago(static_cast<uint64_t>(n - c) * h.interval_seconds));
  return out + "</svg></figure>\n";
}

std::optional<std::map<uint64_t, uint64_t>> histogram_totals(const table::Table& tab) {
  const std::optional<size_t> hist_key = histogram_key(tab);
  if (!hist_key) return std::nullopt;
  const table::KeyColumn& k = tab.keys[*hist_key];
  std::map<uint64_t, uint64_t> totals;
  for (size_t e = 0; e < tab.entries(); ++e) {
    const table::Row r = tab.row(e);
    totals[shown(r.key_number(k.offset), k.address, Options{true})] += r.vals.empty() ? 0 : r.vals[0];
  }
  return totals;
}

}  // namespace histd::render
