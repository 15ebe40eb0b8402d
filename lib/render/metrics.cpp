// Tables as Prometheus metric families (docs/metrics.md): the text format
// 0.0.4 or OpenMetrics 1.0, written directly over the engine's reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "histd/render.h"
#include "render/labels.h"

namespace histd::render {

namespace {

// A metric or label name: [a-zA-Z_][a-zA-Z0-9_]* (':' is for recording
// rules), anything else an underscore.
std::string metric_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

// Text as both formats escape it: backslash and newline, and in a label
// value (`quotes`) the double quote; made valid UTF-8 first.
std::string escaped(std::string_view raw, bool quotes) {
  std::string out;
  for (char c : valid_utf8(raw)) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quotes) out += "\\\"";
    else out += c;
  }
  return out;
}

uint32_t fnv1a32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

struct LabelSet {
  std::vector<std::string> values;
  auto operator<=>(const LabelSet&) const = default;
};

// The samples of one table, grouped by label set.
struct Series {
  std::map<double, uint64_t> buckets;  // histogram: bound -> hits in that bucket
  std::vector<uint64_t> sums;          // per value column, over the label set's entries
};
using SeriesList = std::vector<std::pair<LabelSet, Series>>;


}  // namespace

namespace {

// Whether each entry is a label set of its own: no histogram key, and no
// key whose rendering can make two values one (an .execname, a symbol, a
// hidden address, a string's bytes past its end).
bool one_series_per_entry(const table::Table& tab, int hist_key) {
  if (hist_key >= 0) return false;
  for (const table::KeyColumn& k : tab.keys) {
    const bool number = k.display == table::KeyDisplay::Decimal || k.display == table::KeyDisplay::Hex ||
                        k.display == table::KeyDisplay::Log2 || k.display == table::KeyDisplay::Buckets;
    if (!number || k.address != table::AddressKind::None) return false;
  }
  return true;
}

class Writer {
 public:
  Writer(const Resolver& res, const MetricsOptions& opt) : res_(res), opt_(opt) {}
  void table(const readout::HistTable& t);
  void daemon(const DaemonStats& d);
  std::string finish();

 private:
  void family(const std::string& name, const char* type, const std::string& help);
  // The label sets of a table, at most opt_.max_series (the rest counted in
  // `dropped`): each entry its own, in the table's order; or merged where
  // entries render the same, sorted.
  SeriesList entries_as_series(const table::Table& tab, uint64_t& dropped) const;
  SeriesList merged_series(const table::Table& tab, int hist_key, uint64_t& dropped) const;
  std::string labels(const std::vector<std::string>& names, const LabelSet& set, const std::string& extra = {}) const;
  void write_series(const std::string& base, const table::Table& tab, int hist_key,
                    const std::vector<std::string>& names, const SeriesList& series, const std::string& help);

  const Resolver& res_;
  const MetricsOptions& opt_;
  std::string out_;
  std::set<std::string> families_;  // written (a named table shared by triggers: once)
  // Per table, for the histd_table_* families written last.
  struct Stat {
    std::string table;
    uint64_t hits, entries, dropped, missed, series_dropped;
  };
  std::vector<Stat> stats_;
};

void Writer::family(const std::string& name, const char* type, const std::string& help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escaped(help, false), name, type);
}

std::string Writer::labels(const std::vector<std::string>& names, const LabelSet& set,
                           const std::string& extra) const {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", names[i], escaped(set.values[i], true));
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

void Writer::table(const readout::HistTable& t) {
  const plan::HistPlan& p = t.plan;
  const std::string base = "histd_" + metric_name(p.name ? *p.name
                                                         : fmt::format("{}_{}_{:08x}", p.system, p.event,
                                                                       fnv1a32(p.identity())));
  if (!families_.insert(base).second) return;
  const table::Table& tab = t.table;
  // A lone .log2 or .buckets key makes a histogram; the other keys are labels.
  const std::optional<size_t> histogram = histogram_key(tab);
  const int hist_key = histogram ? static_cast<int>(*histogram) : -1;
  std::vector<std::string> names;
  for (size_t i = 0; i < tab.keys.size(); ++i) {
    if (static_cast<int>(i) == hist_key) continue;
    std::string n = metric_name(tab.keys[i].name);
    while (std::find(names.begin(), names.end(), n) != names.end() || n == "le") n += "_";
    names.push_back(std::move(n));
  }
  uint64_t dropped = 0;
  SeriesList series = one_series_per_entry(tab, hist_key) ? entries_as_series(tab, dropped)
                                                          : merged_series(tab, hist_key, dropped);
  const std::string help = fmt::format("{}:{} {}", p.system, p.event, p.trigger_text());
  write_series(base, tab, hist_key, names, series, help);
  stats_.push_back(Stat{base, tab.hits, tab.entries(), tab.drops, t.missed, dropped});
}

SeriesList Writer::entries_as_series(const table::Table& tab, uint64_t& dropped) const {
  SeriesList series;
  series.reserve(std::min(tab.entries(), opt_.max_series));
  for (size_t e = 0; e < tab.entries(); ++e) {
    if (series.size() >= opt_.max_series) {
      dropped = tab.entries() - e;
      break;
    }
    const table::Row r = tab.row(e);
    LabelSet set;
    for (const table::KeyColumn& k : tab.keys) set.values.push_back(key_label(k, r, res_));
    std::vector<uint64_t> sums(tab.vals.size(), 0);
    for (size_t v = 0; v < tab.vals.size() && v < r.vals.size(); ++v) sums[v] = r.vals[v];
    series.emplace_back(std::move(set), Series{{}, std::move(sums)});
  }
  return series;
}

// A hash of the label values finds an entry's series (a sorted map cost
// most of a 100k-series scrape); sorted once at the end, as written.
SeriesList Writer::merged_series(const table::Table& tab, int hist_key, uint64_t& dropped) const {
  SeriesList series;
  std::unordered_map<std::string, size_t> index;
  std::string id;
  for (size_t e = 0; e < tab.entries(); ++e) {
    const table::Row r = tab.row(e);
    LabelSet set;
    id.clear();
    for (size_t i = 0; i < tab.keys.size(); ++i) {
      if (static_cast<int>(i) == hist_key) continue;
      set.values.push_back(key_label(tab.keys[i], r, res_));
      fmt::format_to(std::back_inserter(id), "{}:{}", set.values.back().size(), set.values.back());
    }
    auto [at, fresh] = index.try_emplace(id, series.size());
    if (fresh) {
      if (series.size() >= opt_.max_series) {
        index.erase(at);
        ++dropped;
        continue;
      }
      series.emplace_back(std::move(set), Series{{}, std::vector<uint64_t>(tab.vals.size(), 0)});
    }
    Series& s = series[at->second].second;
    for (size_t v = 0; v < tab.vals.size() && v < r.vals.size(); ++v) s.sums[v] += r.vals[v];
    if (hist_key >= 0) {
      const table::KeyColumn& k = tab.keys[static_cast<size_t>(hist_key)];
      s.buckets[bucket_bounds(k, r.key_number(k.offset)).upper] += r.vals[0];
    }
  }
  std::sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return series;
}

void Writer::write_series(const std::string& base, const table::Table& tab, int hist_key,
                          const std::vector<std::string>& names, const SeriesList& series,
                          const std::string& help) {
  const bool om = opt_.format == MetricsFormat::OpenMetrics;
  int sum_of = -1;  // the value column that sums the histogram key's field
  if (hist_key >= 0) {
    const table::KeyColumn& k = tab.keys[static_cast<size_t>(hist_key)];
    for (size_t v = 1; v < tab.vals.size(); ++v)
      if (tab.vals[v].printed && tab.vals[v].name == k.name) sum_of = static_cast<int>(v);
    const std::string name = base + "_" + metric_name(k.name);
    family(name, "histogram", help);
    for (const auto& [set, s] : series) {
      uint64_t cumulative = 0;
      for (const auto& [bound, hits] : s.buckets) {
        cumulative += hits;
        out_ += fmt::format("{}_bucket{} {}\n", name, labels(names, set, "le=\"" + bound_text(bound) + "\""), cumulative);
      }
      out_ += fmt::format("{}_bucket{} {}\n", name, labels(names, set, "le=\"+Inf\""), s.sums[0]);
      // OpenMetrics has a _count only beside a _sum (the +Inf bucket says it).
      if (!om || sum_of >= 0) out_ += fmt::format("{}_count{} {}\n", name, labels(names, set), s.sums[0]);
      if (sum_of >= 0) out_ += fmt::format("{}_sum{} {}\n", name, labels(names, set), s.sums[static_cast<size_t>(sum_of)]);
    }
  }
  for (size_t v = 0; v < tab.vals.size(); ++v) {
    if (!tab.vals[v].printed || static_cast<int>(v) == sum_of || (v == 0 && (tab.nohitcount || hist_key >= 0)))
      continue;
    const std::string name = base + "_" + metric_name(tab.vals[v].name);
    family(om ? name : name + "_total", "counter", help);
    for (const auto& [set, s] : series) out_ += fmt::format("{}_total{} {}\n", name, labels(names, set), s.sums[v]);
  }
}

void Writer::daemon(const DaemonStats& d) {
  const bool om = opt_.format == MetricsFormat::OpenMetrics;
  auto one = [&](const char* name, const char* type, const char* help, auto value) {
    const bool counter = std::strcmp(type, "counter") == 0;
    family(om || !counter ? name : std::string(name) + "_total", type, help);
    out_ += fmt::format("{}{} {}\n", name, counter ? "_total" : "", value);
  };
  family("histd_build_info", "gauge", "histd's version");
  out_ += fmt::format("histd_build_info{{version=\"{}\"}} 1\n", escaped(d.version, true));
  one("histd_start_time_seconds", "gauge", "when histd started, in seconds since the epoch",
      fmt::format("{:.3f}", d.start_time_seconds));
  one("histd_triggers", "gauge", "hist and enable triggers", d.triggers);
  one("histd_triggers_limit", "gauge", "histd --max-triggers", d.max_triggers);
  one("histd_synthetic_events", "gauge", "synthetic events defined", d.synthetic_events);
  one("histd_synthetic_events_limit", "gauge", "histd --max-synthetic-events", d.max_synthetic_events);
  one("histd_map_memory_bytes", "gauge", "BPF map memory of the triggers", d.map_memory);
  one("histd_map_memory_limit_bytes", "gauge", "histd --max-map-memory", d.max_map_memory);
  one("histd_missed_events", "counter", "events the kernel's BPF recursion guard kept from histd's programs",
      d.missed_events);
  family(om ? "histd_ring_lost" : "histd_ring_lost_total", "counter",
         "records the ring buffer to histd turned away when histd fell behind");
  out_ += fmt::format("histd_ring_lost_total{{kind=\"trace_records\"}} {}\n", d.ring_lost_trace_records);
  out_ += fmt::format("histd_ring_lost_total{{kind=\"snapshot_notices\"}} {}\n", d.ring_lost_snapshot_notices);
  family(om ? "histd_compiles" : "histd_compiles_total", "counter", "BPF compiles, by who compiled");
  out_ += fmt::format("histd_compiles_total{{by=\"histd-cc\"}} {}\n", d.compiles_by_server);
  out_ += fmt::format("histd_compiles_total{{by=\"clang\"}} {}\n", d.compiles_by_clang);
  one("histd_compiler_starts", "counter", "starts of the resident compiler histd-cc", d.compiler_starts);
  family("histd_activation_seconds", "histogram", "time a trigger change took to take effect (compile, load, attach)");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < d.activation_counts.size(); ++i) {
    cumulative += d.activation_counts[i];
    const std::string le = i < d.activation_bounds.size() ? fmt::format("{}", d.activation_bounds[i]) : "+Inf";
    out_ += fmt::format("histd_activation_seconds_bucket{{le=\"{}\"}} {}\n", le, cumulative);
  }
  out_ += fmt::format("histd_activation_seconds_count {}\nhistd_activation_seconds_sum {:.6f}\n", cumulative,
                      d.activation_sum_seconds);
  one("histd_scrape_duration_seconds", "gauge", "time this scrape took to read the tables",
      fmt::format("{:.6f}", d.scrape_seconds));
}

std::string Writer::finish() {
  const bool om = opt_.format == MetricsFormat::OpenMetrics;
  auto stat_family = [&](const char* name, const char* type, const char* help, auto value) {
    const bool counter = std::strcmp(type, "counter") == 0;
    family(om || !counter ? name : std::string(name) + "_total", type, help);
    for (const Stat& s : stats_)
      out_ += fmt::format("{}{}{{table=\"{}\"}} {}\n", name, counter ? "_total" : "", s.table, value(s));
  };
  if (!stats_.empty()) {
    stat_family("histd_table_hits", "counter", "events counted by the table (its Hits)",
                [](const Stat& s) { return s.hits; });
    stat_family("histd_table_entries", "gauge", "entries in the table", [](const Stat& s) { return s.entries; });
    stat_family("histd_table_dropped", "counter", "events the full table dropped (its Dropped)",
                [](const Stat& s) { return s.dropped; });
    stat_family("histd_table_missed", "counter", "events the kernel's BPF recursion guard kept from the table",
                [](const Stat& s) { return s.missed; });
    stat_family("histd_metrics_series_dropped", "gauge",
                "label sets of the table not exported (past --metrics-max-series)",
                [](const Stat& s) { return s.series_dropped; });
  }
  if (om) out_ += "# EOF\n";
  return std::move(out_);
}

}  // namespace

std::string metrics(const std::vector<readout::EventHist>& events, const Resolver& resolver,
                    const MetricsOptions& options, const DaemonStats* daemon) {
  Writer w(resolver, options);
  for (const readout::EventHist& e : events)
    for (const readout::HistTable& t : e.tables) w.table(t);
  if (daemon) w.daemon(*daemon);
  return w.finish();
}

}  // namespace histd::render
