// SPDX-License-Identifier: GPL-2.0-only
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
#include "render/series.h"

namespace histd::render {

namespace {

std::string escaped(std::string_view raw, bool quotes) {
  std::string out;
  append_escaped(out, raw, quotes);
  return out;
}

void append_number(std::string& out, uint64_t n) {
  const fmt::format_int digits(n);
  out.append(digits.data(), digits.size());
}

// histd's own families (Writer::daemon, Writer::finish). A table's never
// share a name with one: two families of one name make a scrape that
// OpenMetrics parsers refuse.
constexpr std::string_view kOwnFamilies[] = {"histd_build_info",
                                             "histd_start_time_seconds",
                                             "histd_triggers",
                                             "histd_triggers_limit",
                                             "histd_synthetic_events",
                                             "histd_synthetic_events_limit",
                                             "histd_map_memory_bytes",
                                             "histd_map_memory_limit_bytes",
                                             "histd_missed_events",
                                             "histd_ring_lost",
                                             "histd_compiles",
                                             "histd_compiler_starts",
                                             "histd_activation_seconds",
                                             "histd_scrape_duration_seconds",
                                             "histd_table_hits",
                                             "histd_table_entries",
                                             "histd_table_dropped",
                                             "histd_table_missed",
                                             "histd_metrics_series_dropped"};

// The family a table makes: histd_<name>, or histd_<system>_<event>_<hash
// of the trigger>; "_table" after it while one of histd's own families is
// that name or starts with it ("map_memory" and its "bytes" would make
// histd_map_memory_bytes).
std::string family_base(const plan::HistPlan& p) {
  std::string base =
      "histd_" + metric_name(p.name ? *p.name : fmt::format("{}_{}_{:08x}", p.system, p.event, fnv1a32(p.identity())));
  auto taken = [&](std::string_view own) { return own == base || own.starts_with(base + "_"); };
  while (std::any_of(std::begin(kOwnFamilies), std::end(kOwnFamilies), taken)) base += "_table";
  return base;
}

// What must agree for tables to share a family: key and value columns.
std::string table_shape(const table::Table& tab) {
  std::string shape;
  for (const table::KeyColumn& k : tab.keys)
    shape += fmt::format("{}/{}/{}/{};", k.name, static_cast<int>(k.display), k.buckets, static_cast<int>(k.address));
  shape += '|';
  for (const table::ValColumn& v : tab.vals) shape += fmt::format("{}/{};", v.name, v.printed);
  return shape + (tab.nohitcount ? "n" : "");
}

// The tables of one family: the same trigger (or name=) in the top tree
// and in instances.
struct Member {
  const std::string* instance;
  const readout::HistTable* table;
};

class Writer {
 public:
  Writer(const Resolver& res, const MetricsOptions& opt) : res_(res), opt_(opt) {}
  void tables(const std::string& base, const std::vector<Member>& members);
  void daemon(const DaemonStats& d);
  std::string finish();

 private:
  void family(const std::string& name, const char* type, const std::string& help);
  // One sample line: NAME{LABELS[,EXTRA]} VALUE
  void sample(std::string_view name, std::string_view suffix, std::string_view labels, std::string_view extra,
              uint64_t value);
  void write_series(const std::string& base, const table::Table& tab, int hist_key, const std::vector<Samples>& trees,
                    const std::string& help);

  const Resolver& res_;
  const MetricsOptions& opt_;
  std::string out_;
  // Per table, for the histd_table_* families written last.
  struct Stat {
    std::string table;
    std::string instance;
    uint64_t hits, entries, dropped, missed, series_dropped;
  };
  std::vector<Stat> stats_;
};

void Writer::family(const std::string& name, const char* type, const std::string& help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escaped(help, false), name, type);
}

void Writer::sample(std::string_view name, std::string_view suffix, std::string_view labels, std::string_view extra,
                    uint64_t value) {
  out_ += name;
  out_ += suffix;
  if (!labels.empty() || !extra.empty()) {
    out_ += '{';
    out_ += labels;
    if (!labels.empty() && !extra.empty()) out_ += ',';
    out_ += extra;
    out_ += '}';
  }
  out_ += ' ';
  append_number(out_, value);
  out_ += '\n';
}

// A family's tables, in the order the trees came: the first one's shape is
// the family's; a table of an instance whose named table has other
// columns is not exported (its label sets counted as dropped).
void Writer::tables(const std::string& base, const std::vector<Member>& members) {
  const table::Table& tab = members.front().table->table;
  // A lone .log2 or .buckets key makes a histogram; the other keys are labels.
  const std::optional<size_t> histogram = histogram_key(tab);
  const int hist_key = histogram ? static_cast<int>(*histogram) : -1;
  const std::vector<std::string> names = label_names(tab, hist_key);
  const std::string shape = table_shape(tab);
  std::vector<Samples> trees;
  std::set<std::string> seen;  // a named table shared by triggers of one tree: once
  for (const Member& m : members) {
    if (!seen.insert(*m.instance).second) continue;
    const table::Table& t = m.table->table;
    uint64_t dropped = 0;
    if (table_shape(t) != shape) {
      dropped = t.entries();
    } else {
      const std::string first = m.instance->empty() ? "" : "tracefs_instance=\"" + escaped(*m.instance, true) + "\"";
      trees.push_back(table_series(t, hist_key, first, names, res_, opt_.max_series, dropped));
    }
    stats_.push_back(Stat{base, *m.instance, t.hits, t.entries(), t.drops, m.table->missed, dropped});
  }
  const plan::HistPlan& p = members.front().table->plan;
  write_series(base, tab, hist_key, trees, fmt::format("{}:{} {}", p.system, p.event, p.trigger_text()));
}

void Writer::write_series(const std::string& base, const table::Table& tab, int hist_key,
                          const std::vector<Samples>& trees, const std::string& help) {
  const bool om = opt_.format == MetricsFormat::OpenMetrics;
  int sum_of = -1;  // the value column that sums the histogram key's field
  for (const Samples& series : trees)
    out_.reserve(out_.size() + series.labels.size() + series.size() * (base.size() + 32) * tab.vals.size());
  if (hist_key >= 0) {
    const table::KeyColumn& k = tab.keys[static_cast<size_t>(hist_key)];
    for (size_t v = 1; v < tab.vals.size(); ++v)
      if (tab.vals[v].printed && tab.vals[v].name == k.name) sum_of = static_cast<int>(v);
    const std::string name = base + "_" + metric_name(k.name);
    family(name, "histogram", help);
    // Every bucket of the key's range, hit or not, on every host alike: sums
    // by le across hosts stay cumulative, and a quantile falls in its bucket.
    const std::vector<double> bounds = fixed_bounds(k);
    std::vector<std::string> les;
    for (double b : bounds) les.push_back("le=\"" + bound_text(b) + "\"");
    for (const Samples& series : trees)
      for (size_t i = 0; i < series.size(); ++i) {
        const std::string_view labels = series.label_text(i);
        uint64_t cumulative = 0;
        auto hit = series.buckets[i].begin();
        for (size_t b = 0; b < bounds.size(); ++b) {
          for (; hit != series.buckets[i].end() && hit->first <= bounds[b]; ++hit) cumulative += hit->second;
          sample(name, "_bucket", labels, les[b], cumulative);
        }
        sample(name, "_bucket", labels, "le=\"+Inf\"", series.sum(i, 0));
        // OpenMetrics has a _count only beside a _sum (the +Inf bucket says it).
        if (!om || sum_of >= 0) sample(name, "_count", labels, {}, series.sum(i, 0));
        if (sum_of >= 0) sample(name, "_sum", labels, {}, series.sum(i, static_cast<size_t>(sum_of)));
      }
  }
  for (size_t v = 0; v < tab.vals.size(); ++v) {
    if (!tab.vals[v].printed || static_cast<int>(v) == sum_of || (v == 0 && (tab.nohitcount || hist_key >= 0)))
      continue;
    const std::string name = base + "_" + metric_name(tab.vals[v].name);
    family(om ? name : name + "_total", "counter", help);
    for (const Samples& series : trees)
      for (size_t i = 0; i < series.size(); ++i) sample(name, "_total", series.label_text(i), {}, series.sum(i, v));
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
    for (const Stat& s : stats_) {
      const std::string instance = s.instance.empty() ? "" : ",tracefs_instance=\"" + escaped(s.instance, true) + "\"";
      out_ += fmt::format("{}{}{{table=\"{}\"{}}} {}\n", name, counter ? "_total" : "", s.table, instance, value(s));
    }
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

std::string metrics(const std::vector<TreeHist>& trees, const Resolver& resolver, const MetricsOptions& options,
                    const DaemonStats* daemon) {
  // Families in the order their first table comes.
  std::vector<std::pair<std::string, std::vector<Member>>> families;
  std::unordered_map<std::string, size_t> index;
  for (const TreeHist& tree : trees)
    for (const readout::EventHist& e : tree.events)
      for (const readout::HistTable& t : e.tables) {
        std::string base = family_base(t.plan);
        auto [at, fresh] = index.try_emplace(base, families.size());
        if (fresh) families.emplace_back(std::move(base), std::vector<Member>{});
        families[at->second].second.push_back(Member{&tree.instance, &t});
      }
  Writer w(resolver, options);
  for (const auto& [base, members] : families) w.tables(base, members);
  if (daemon) w.daemon(*daemon);
  return w.finish();
}

}  // namespace histd::render
