// SPDX-License-Identifier: GPL-2.0-only
// Every table as one HTML5 page with inline SVG bar charts (render::page,
// docs/metrics.md). Self-contained: a Content-Security-Policy of
// default-src 'none' plus inline styles and page_script() by its hash
// serves it whole.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "histd/render.h"
#include "render/labels.h"
#include "render/page_parts.h"

namespace histd::render {

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

namespace {

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
    out += fmt::format("<p class=\"note\">{} more entries, {} hits, not shown: the hist file has every entry.</p>\n",
                       n - shown_rows, rest_hits);
  return out;
}

// The history histd kept of a table, by its event and trigger text.
const TableHistory* history_of(std::span<const TableHistory> history, const std::string& event,
                               const std::string& trigger) {
  for (const TableHistory& h : history)
    if (h.event == event && h.trigger == trigger) return &h;
  return nullptr;
}

std::string table_html(const readout::HistTable& t, const TableHistory* history, const Resolver& res,
                       const PageOptions& o) {
  const table::Table& tab = t.table;
  std::string out = fmt::format(
      "<section class=\"table\">\n<pre class=\"trigger\">{}</pre>\n<p class=\"totals\">Hits: {} &middot; "
      "Entries: {} &middot; Dropped: {} &middot; Missed: {}</p>\n",
      html(t.plan.trigger_text() + (t.paused ? " [paused]" : " [active]")), tab.hits, tab.entries(), tab.drops,
      t.missed);
  const std::optional<size_t> k = histogram_key(tab);
  if (k && history && !history->intervals.empty()) out += heatmap_html(tab.keys[*k], *history);
  if (stack_key(tab) && tab.entries() > 0) out += flamegraph_html(t, res);
  if (tab.entries() == 0)
    out += "<p class=\"note\">No entries yet.</p>\n";
  else if (k)
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
    ".axis,.tick{stroke:#888}"
    "svg text{font:10px ui-monospace,monospace;fill:#444}"
    ".note{color:#666}.current{font-weight:bold}"
    ".cell:hover{stroke:#000}"
    ".flame{display:block;margin:.5em 0}.fg{width:100%;height:auto}"
    ".fr{cursor:pointer}.fr rect{stroke:#fff;stroke-width:.5}.fr:hover rect{stroke:#000}"
    ".fr text{font:11px ui-monospace,monospace;fill:#000;pointer-events:none}"
    ".fr.match rect{fill:#e040e0}";

// The y scale is the page's one choice, made by its address: the page has
// no script for it, and the meta refresh reloads the address as it is, so the
// choice stays. The current scale is plain text, the other a link.
std::string scale_links(PageScale scale) {
  const bool log = scale == PageScale::Log;
  return fmt::format("<p class=\"scale\">y scale: {} | {}</p>\n",
                     log ? "<a href=\"?scale=linear\">linear</a>" : "<span class=\"current\">linear</span>",
                     log ? "<span class=\"current\">log</span>" : "<a href=\"?scale=log\">log</a>");
}

}  // namespace

std::string page(const std::vector<readout::EventHist>& events, const Resolver& resolver, const PageOptions& options,
                 std::span<const TableHistory> history) {
  size_t tables = 0;
  for (const readout::EventHist& e : events) tables += e.tables.size();
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"refresh\" content=\"{0}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>histd</title>\n<style>{1}</style>\n"
      "</head>\n<body>\n<h1>histd</h1>\n<p class=\"note\">{2} hist tables; this page reloads every {0} s.</p>\n{3}",
      options.refresh_seconds, kStyle, tables, scale_links(options.scale));
  if (tables == 0) out += "<p>No hist triggers: write one to an event's <code>trigger</code> file.</p>\n";
  for (const readout::EventHist& e : events) {
    if (e.tables.empty()) continue;
    const std::string name = e.system + ":" + e.event;
    out += fmt::format("<section class=\"event\">\n<h2>{}</h2>\n", html(name));
    for (const readout::HistTable& t : e.tables)
      out += table_html(t, history_of(history, name, t.plan.trigger_text()), resolver, options);
    out += "</section>\n";
  }
  // The flame graphs' zoom and search: the page's only script, allowed by
  // its hash alone (histd-exporter's Content-Security-Policy).
  if (out.find("<figure class=\"flame\"") != std::string::npos)
    out += fmt::format("<script>{}</script>\n", page_script());
  return out + "</body>\n</html>\n";
}

}  // namespace histd::render
