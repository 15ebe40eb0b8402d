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

// Appends text as both formats escape it: backslash and newline, and in a
// label value (`quotes`) the double quote; made valid UTF-8 first. Most
// labels are digits or plain names: those are appended as they are.
void append_escaped(std::string& out, std::string_view raw, bool quotes) {
  const bool plain = std::all_of(raw.begin(), raw.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '\\' && c != '"';
  });
  if (plain) {
    out += raw;
    return;
  }
  for (char c : valid_utf8(raw)) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
}

std::string escaped(std::string_view raw, bool quotes) {
  std::string out;
  append_escaped(out, raw, quotes);
  return out;
}

void append_number(std::string& out, uint64_t n) {
  const fmt::format_int digits(n);
  out.append(digits.data(), digits.size());
}

// Appends one label set's text: `name="value",...`, after `first` (a
// tree's tracefs_instance label, or nothing).
void append_labels(std::string& out, std::string_view first, const std::vector<std::string>& names,
                   const std::vector<std::string>& values) {
  out += first;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0 || !first.empty()) out += ',';
    out += names[i];
    out += "=\"";
    append_escaped(out, values[i], true);
    out += '"';
  }
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

// The samples of one table, one per label set, ready to write: each set's
// label text (`name="value",...`, escaped, no braces) back to back in one
// buffer, its sums per value column, and for a histogram its buckets. A
// 100k-series table is then a few allocations, not a few per series.
struct Samples {
  std::string labels;
  std::vector<size_t> ends;                         // where each set's label text ends in `labels`
  size_t columns = 0;                               // value columns
  std::vector<uint64_t> sums;                       // set × column
  std::vector<std::map<double, uint64_t>> buckets;  // histogram: bound -> hits in that bucket
  size_t size() const { return ends.size(); }
  std::string_view label_text(size_t i) const {
    const size_t from = i == 0 ? 0 : ends[i - 1];
    return std::string_view(labels).substr(from, ends[i] - from);
  }
  uint64_t sum(size_t i, size_t column) const { return sums[i * columns + column]; }
};

// The metrics are for anyone who can reach the exporter: kernel addresses
// are hidden as from a reader who may not see them, in sums as in keys.
uint64_t value_shown(const table::Table& tab, const table::Row& r, size_t column) {
  return shown(r.vals[column], tab.vals[column].address, Options{true}, true);
}

// A histogram key's bucket as shown: every bucket of kernel addresses is
// bucket 0, as the hist file shows their keys.
uint64_t bucket_shown(const table::Table& tab, int hist_key, const table::Row& r) {
  const table::KeyColumn& k = tab.keys[static_cast<size_t>(hist_key)];
  return shown(r.key_number(k.offset), k.address, Options{true});
}

// Whether each entry is a label set of its own: no histogram key, and no
// key whose rendering can make two values one (an .execname, a symbol, a
// hidden address, a string's bytes past its end).
bool one_series_per_entry(const table::Table& tab, int hist_key) {
  if (hist_key >= 0) return false;
  for (const table::KeyColumn& k : tab.keys) {
    if (!table::key_traits(k.display).numeric_label || k.address != table::AddressKind::None) return false;
  }
  return true;
}

// The family a table makes: histd_<name>, or histd_<system>_<event>_<hash
// of the trigger>.
std::string family_base(const plan::HistPlan& p) {
  return "histd_" +
         metric_name(p.name ? *p.name : fmt::format("{}_{}_{:08x}", p.system, p.event, fnv1a32(p.identity())));
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
  // The label sets of a table, at most opt_.max_series (the rest counted in
  // `dropped`): each entry its own, in the table's order; or merged where
  // entries render the same, sorted.
  Samples entries_as_series(const table::Table& tab, std::string_view first, const std::vector<std::string>& names,
                            uint64_t& dropped) const;
  Samples merged_series(const table::Table& tab, int hist_key, std::string_view first,
                        const std::vector<std::string>& names, uint64_t& dropped) const;
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
  std::vector<std::string> names;
  for (size_t i = 0; i < tab.keys.size(); ++i) {
    if (static_cast<int>(i) == hist_key) continue;
    std::string n = metric_name(tab.keys[i].name);
    while (std::find(names.begin(), names.end(), n) != names.end() || n == "le" || n == "tracefs_instance") n += "_";
    names.push_back(std::move(n));
  }
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
      trees.push_back(one_series_per_entry(t, hist_key) ? entries_as_series(t, first, names, dropped)
                                                        : merged_series(t, hist_key, first, names, dropped));
    }
    stats_.push_back(Stat{base, *m.instance, t.hits, t.entries(), t.drops, m.table->missed, dropped});
  }
  const plan::HistPlan& p = members.front().table->plan;
  write_series(base, tab, hist_key, trees, fmt::format("{}:{} {}", p.system, p.event, p.trigger_text()));
}

Samples Writer::entries_as_series(const table::Table& tab, std::string_view first,
                                  const std::vector<std::string>& names, uint64_t& dropped) const {
  const size_t shown = std::min(tab.entries(), opt_.max_series);
  dropped = tab.entries() - shown;
  Samples series;
  series.columns = tab.vals.size();
  series.ends.reserve(shown);
  series.sums.reserve(shown * series.columns);
  series.labels.reserve(shown * 16);
  std::vector<std::string> values(tab.keys.size());
  for (size_t e = 0; e < shown; ++e) {
    const table::Row r = tab.row(e);
    for (size_t i = 0; i < tab.keys.size(); ++i) values[i] = key_label(tab.keys[i], r, res_);
    append_labels(series.labels, first, names, values);
    series.ends.push_back(series.labels.size());
    for (size_t v = 0; v < series.columns; ++v) series.sums.push_back(v < r.vals.size() ? value_shown(tab, r, v) : 0);
  }
  return series;
}

// A hash of the label values finds an entry's set (a sorted map cost most
// of a 100k-series scrape); sorted once at the end, as written.
Samples Writer::merged_series(const table::Table& tab, int hist_key, std::string_view first,
                              const std::vector<std::string>& names, uint64_t& dropped) const {
  struct Merged {
    LabelSet set;
    std::vector<uint64_t> sums;
    std::map<double, uint64_t> buckets;
  };
  std::vector<Merged> merged;
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
    auto [at, fresh] = index.try_emplace(id, merged.size());
    if (fresh) {
      if (merged.size() >= opt_.max_series) {
        index.erase(at);
        ++dropped;
        continue;
      }
      merged.push_back(Merged{std::move(set), std::vector<uint64_t>(tab.vals.size(), 0), {}});
    }
    Merged& m = merged[at->second];
    for (size_t v = 0; v < tab.vals.size() && v < r.vals.size(); ++v) m.sums[v] += value_shown(tab, r, v);
    if (hist_key >= 0) {
      const BucketBounds b = bucket_bounds(tab.keys[static_cast<size_t>(hist_key)], bucket_shown(tab, hist_key, r));
      m.buckets[b.upper] += r.vals[0];
    }
  }
  std::sort(merged.begin(), merged.end(), [](const Merged& a, const Merged& b) { return a.set < b.set; });
  Samples series;
  series.columns = tab.vals.size();
  for (Merged& m : merged) {
    append_labels(series.labels, first, names, m.set.values);
    series.ends.push_back(series.labels.size());
    series.sums.insert(series.sums.end(), m.sums.begin(), m.sums.end());
    series.buckets.push_back(std::move(m.buckets));
  }
  return series;
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
    for (const Samples& series : trees)
      for (size_t i = 0; i < series.size(); ++i) {
        const std::string_view labels = series.label_text(i);
        uint64_t cumulative = 0;
        for (const auto& [bound, hits] : series.buckets[i]) {
          cumulative += hits;
          sample(name, "_bucket", labels, "le=\"" + bound_text(bound) + "\"", cumulative);
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
