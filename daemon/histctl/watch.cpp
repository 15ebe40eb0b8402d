// SPDX-License-Identifier: GPL-2.0-only
#include "histctl/watch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "histctl/client.h"
#include "histctl/hist_json.h"
#include "histctl/interval.h"

namespace histd::histctl {

namespace {

using nlohmann::json;

// Rows of cells as aligned columns, two spaces apart; `right[i]`: column i
// is aligned right (numbers). No blanks at a line's end.
std::string columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      const bool r = i < right.size() && right[i];
      line += r ? fmt::format("{:>{}}", row[i], width[i]) : fmt::format("{:<{}}", row[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string rate_cell(const json& rates, const std::string& name) {
  if (!rates.contains(name)) return "-";
  return fmt::format("{:.1f}", rates[name].get<double>());
}

// The first value's change in the interval: what the view ranks entries by.
uint64_t first_delta(const json& e, const std::string& name) {
  const json& deltas = object_of(e, "deltas");
  return deltas.contains(name) ? count_of(deltas[name]).value_or(0) : 0;
}

// The entries that changed in the interval, the `top` that changed most
// first (a 100k-entry table is not a screen), then what was left out.
std::string entries_text(const json& t, size_t top) {
  const json& entries = array_of(t, "entries");
  if (entries.empty()) return "no entries\n";
  std::vector<std::string> names;
  for (const auto& [name, v] : object_of(entries.front(), "values").items()) names.push_back(name);
  std::vector<const json*> moved;
  for (const json& e : entries)
    if (changed(e)) moved.push_back(&e);
  if (moved.empty()) return fmt::format("no entry changed ({} entries)\n", entries.size());
  std::stable_sort(moved.begin(), moved.end(), [&](const json* a, const json* b) {
    return first_delta(*a, names.front()) > first_delta(*b, names.front());
  });
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right{false};
  rows.push_back({"keys"});
  for (const std::string& n : names) {
    rows[0].insert(rows[0].end(), {n, "delta", "rate/s"});
    right.insert(right.end(), {true, true, true});
  }
  const size_t shown = std::min(top, moved.size());
  for (size_t i = 0; i < shown; ++i) {
    const json& e = *moved[i];
    std::vector<std::string> row{object_of(e, "keys").dump()};
    const json& values = object_of(e, "values");
    const json& deltas = object_of(e, "deltas");
    for (const std::string& n : names)
      row.insert(row.end(), {values.contains(n) ? values[n].dump() : "-",
                             deltas.contains(n) ? "+" + deltas[n].dump() : "-", rate_cell(object_of(e, "rates"), n)});
    rows.push_back(std::move(row));
  }
  std::string out = columns(rows, right);
  uint64_t rest_delta = 0;
  for (size_t i = shown; i < moved.size(); ++i) rest_delta += first_delta(*moved[i], names.front());
  if (moved.size() > shown)
    out += fmt::format("{} more changed entries: {} +{}\n", moved.size() - shown, names.front(), rest_delta);
  if (entries.size() > moved.size()) out += fmt::format("{} entries unchanged\n", entries.size() - moved.size());
  return out;
}

// A row per label set: its hits and a column per percentile ("-" for a
// label set without events in the interval); "" when none had any.
std::string percentiles_columns(const json& p, size_t top) {
  const json& sets = array_of(p, "label_sets");
  std::vector<std::string> names;
  for (const json& s : sets)
    if (names.empty())
      for (const json& e : array_of(s, "percentiles")) names.push_back(e.value("name", ""));
  if (names.empty()) return "";
  std::vector<std::vector<std::string>> rows{{"label set", "hits"}};
  rows[0].insert(rows[0].end(), names.begin(), names.end());
  std::vector<const json*> ranked;
  for (const json& s : sets) ranked.push_back(&s);
  std::stable_sort(ranked.begin(), ranked.end(), [](const json* a, const json* b) {
    return a->value("hits", uint64_t{0}) > b->value("hits", uint64_t{0});
  });
  for (size_t i = 0; i < ranked.size() && i < top; ++i) {
    const json& s = *ranked[i];
    std::vector<std::string> row{object_of(s, "keys").dump(), s.value("hits", json(0)).dump()};
    for (const json& e : array_of(s, "percentiles")) row.push_back(percentile_cell(e));
    row.resize(rows[0].size(), "-");
    rows.push_back(std::move(row));
  }
  std::string out = columns(rows, {false, true});
  if (ranked.size() > top) out += fmt::format("{} more label sets\n", ranked.size() - top);
  return out;
}

}  // namespace

json interval_report(const json& before, const json& now, double seconds, const KeyRules& rules,
                     std::span<const quantile::Percentile> wanted) {
  json report = event_interval(before, now, seconds);
  for (json& t : report["tables"]) {
    auto key = choose_key(t, rules);
    if (!key) continue;
    json deltas = json::array();
    for (const json& e : t["entries"]) deltas.push_back({{"keys", e["keys"]}, {"values", e["deltas"]}});
    auto p = percentiles_json(deltas, *key, wanted);
    if (p) t["percentiles"] = std::move(*p);
  }
  return report;
}

std::string interval_line(json report, double time, double interval, double elapsed) {
  for (json& t : report["tables"]) {
    json kept = json::array();
    for (json& e : t["entries"])
      if (changed(e)) kept.push_back(std::move(e));
    t["entries"] = std::move(kept);
  }
  report["time"] = std::round(time * 1000) / 1000;
  report["interval"] = interval;
  report["elapsed"] = std::round(elapsed * 1000) / 1000;
  return report.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string interval_text(const json& report, size_t top) {
  std::string out;
  for (const json& t : array_of(report, "tables")) {
    out += fmt::format("\n# {}\n", t.value("trigger", ""));
    out += entries_text(t, top);
    const json& totals = object_of(t, "totals");
    const json& deltas = object_of(t, "deltas");
    out += fmt::format("Hits: {} (+{})  Entries: {}  Dropped: {}", totals.value("hits", uint64_t{0}),
                       deltas.value("hits", uint64_t{0}), totals.value("entries", uint64_t{0}),
                       totals.value("dropped", uint64_t{0}));
    if (const uint64_t missed = totals.value("missed", uint64_t{0})) out += fmt::format("  Missed: {}", missed);
    out += "\n";
    if (t.value("reset", false)) out += "reset: the table's counts went down (a clear): deltas count from 0\n";
    if (t.contains("percentiles")) {
      const json& p = object_of(t, "percentiles");
      const std::string cells = percentiles_columns(p, top);
      out += fmt::format("percentiles of {} in this interval:{}", p.value("key", ""),
                         cells.empty() ? " none (no events)\n" : "\n" + cells);
    }
  }
  return out;
}

int watch(const WatchOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.interval));
  json before;  // null: nothing read yet
  Clock::time_point before_at;
  int shown = 0;
  for (int i = 0;; ++i) {
    if (i > 0) std::this_thread::sleep_until(start + i * period);
    int rc = 0;
    auto doc = show_json(o.socket_path, o.event, rc);
    if (!doc) return rc;
    const auto now_at = Clock::now();
    const double seconds = before.is_null() ? 0 : std::chrono::duration<double>(now_at - before_at).count();
    // With --json every line is an interval: the first read is where the first starts.
    if (!o.json || !before.is_null()) {
      const json report = interval_report(before, *doc, seconds, o.key, o.percentiles);
      if (o.json) {
        const double time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        fmt::print("{}\n", interval_line(report, time, o.interval, seconds));
      } else {
        std::string screen = isatty(STDOUT_FILENO) ? "\033[H\033[2J" : "";
        screen += fmt::format("{} every {}s (refresh {})\n", o.event, o.interval, i + 1);
        fmt::print("{}", screen + interval_text(report, o.top));
      }
      std::fflush(stdout);
      ++shown;
    }
    before = std::move(*doc);
    before_at = now_at;
    if (o.count > 0 && shown >= o.count) return 0;
  }
}

}  // namespace histd::histctl
