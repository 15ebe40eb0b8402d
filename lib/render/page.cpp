// SPDX-License-Identifier: GPL-2.0-only
// Every table as one HTML5 page with inline SVG bar charts (render::page,
// docs/metrics.md). Self-contained: a Content-Security-Policy of
// default-src 'none' plus inline styles serves it whole.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "histd/render.h"
#include "render/key_formats.h"
#include "render/labels.h"

namespace histd::render {

namespace {

// Text as HTML shows it, in content and in quoted attributes alike.
std::string html(std::string_view raw) {
  std::string out;
  for (char c : valid_utf8(raw)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

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

std::string range_text(const table::KeyColumn& k, uint64_t v) {
  const BucketBounds b = bucket_bounds(k, v);
  return b.lower == b.upper ? bound_text(b.upper) : bound_text(b.lower) + "-" + bound_text(b.upper);
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
  const int plot = 160, left = 64, top = 12, bottom = 84;
  const int n = static_cast<int>(std::max<size_t>(slots.size(), 1));
  const int slot = std::clamp(640 / n, 4, 32);
  const int width = left + n * slot + 8, height = top + plot + bottom;
  const int label_every = (14 + slot - 1) / slot;  // keep rotated labels ~14px apart
  std::string out = fmt::format(
      "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2} per {3} bucket\">\n",
      width, height, html(c.caption), html(k.name));
  out += fmt::format(
      "<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
      "<line class=\"axis\" x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\"/>\n",
      left - 1, top, top + plot, width - 4);
  out += fmt::format(
      "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}</text>"
      "<text x=\"{0}\" y=\"{3}\" text-anchor=\"end\">0</text>\n",
      left - 4, top + 4, most, top + plot);
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto [v, hits] = slots[i];
    const int x = left + static_cast<int>(i) * slot;
    if (hits) {
      const int h = std::max(1, static_cast<int>(static_cast<double>(hits) * plot / static_cast<double>(most) + 0.5));
      out += fmt::format(
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{} ~ {} ({}): {}"
          "</title></rect>\n",
          x, top + plot - h, std::max(1, slot - 2), h, html(k.name), bucket_label(k, v), range_text(k, v), hits);
    }
    if (i % static_cast<size_t>(label_every) == 0) {
      const int lx = x + slot / 2, ly = top + plot + 10;
      out += fmt::format(
          "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-45 {0} {1})\">{2}"
          "</text>\n",
          lx, ly, range_text(k, v));
    }
  }
  out += "</svg>";
  if (cut) out += fmt::format("<p class=\"note\">{} more non-empty buckets not drawn.</p>", cut);
  return out;
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

// The entries a person looks for are at the "top" end of the trigger's
// first sort column: the most hit under the default (hitcount ascending,
// which puts them last), the first ones under a descending sort. The page
// shows those, in the hist file's order, and sums up the rest.
std::string rows_html(const table::Table& tab, const Resolver& res, const PageOptions& o) {
  const Options hide{true};
  const size_t n = tab.entries(), shown_rows = std::min(n, o.max_rows);
  const bool descending = !tab.sort.empty() && tab.sort.front().descending;
  const size_t first = descending ? 0 : n - shown_rows;
  std::string text;
  for (size_t e = first; e < first + shown_rows; ++e) text += render_row(tab, e, res, hide) + "\n";
  uint64_t rest_hits = 0;
  for (size_t e = 0; e < n; ++e)
    if (e < first || e >= first + shown_rows) rest_hits += tab.row(e).vals.empty() ? 0 : tab.row(e).vals[0];
  std::string out = "<pre class=\"entries\">" + html(text) + "</pre>\n";
  if (n > shown_rows)
    out += fmt::format(
        "<p class=\"note\">{} more entries, {} hits, not shown: the hist file has every entry.</p>\n",
        n - shown_rows, rest_hits);
  return out;
}

std::string table_html(const readout::HistTable& t, const Resolver& res, const PageOptions& o) {
  const table::Table& tab = t.table;
  std::string out = fmt::format(
      "<section class=\"table\">\n<pre class=\"trigger\">{}</pre>\n<p class=\"totals\">Hits: {} &middot; "
      "Entries: {} &middot; Dropped: {} &middot; Missed: {}</p>\n",
      html(t.plan.trigger_text() + (t.paused ? " [paused]" : " [active]")), tab.hits, tab.entries(), tab.drops,
      t.missed);
  if (tab.entries() == 0)
    out += "<p class=\"note\">No entries yet.</p>\n";
  else if (const auto k = histogram_key(tab))
    out += charts_html(tab, *k, res, o);
  else
    out += rows_html(tab, res, o);
  return out + "</section>\n";
}

constexpr const char* kStyle =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fff}"
    "h2{margin:1.2em 0 .3em;font-size:1.15em}"
    "pre{font:13px ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:anywhere;margin:.3em 0}"
    ".trigger{background:#f2f2f2;padding:.3em .5em}"
    ".totals{margin:.3em 0}"
    "figure{display:inline-block;vertical-align:top;margin:.5em 1.5em .5em 0}"
    "figcaption{font:13px ui-monospace,monospace;overflow-wrap:anywhere}"
    ".bar{fill:#3f6fae}.bar:hover{fill:#d9700a}"
    ".axis{stroke:#888}"
    "svg text{font:10px ui-monospace,monospace;fill:#444}"
    ".note{color:#666}";

}  // namespace

std::string page(const std::vector<readout::EventHist>& events, const Resolver& resolver, const PageOptions& options) {
  size_t tables = 0;
  for (const readout::EventHist& e : events) tables += e.tables.size();
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"refresh\" content=\"{0}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>histd</title>\n<style>{1}</style>\n"
      "</head>\n<body>\n<h1>histd</h1>\n<p class=\"note\">{2} hist tables; this page reloads every {0} s.</p>\n",
      options.refresh_seconds, kStyle, tables);
  if (tables == 0) out += "<p>No hist triggers: write one to an event's <code>trigger</code> file.</p>\n";
  for (const readout::EventHist& e : events) {
    if (e.tables.empty()) continue;
    out += fmt::format("<section class=\"event\">\n<h2>{}</h2>\n", html(e.system + ":" + e.event));
    for (const readout::HistTable& t : e.tables) out += table_html(t, resolver, options);
    out += "</section>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace histd::render
