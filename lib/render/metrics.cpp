// Tables as Prometheus metric families (docs/metrics.md): the text format
// 0.0.4 or OpenMetrics 1.0, written directly over the engine's reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "histd/modifier.h"
#include "histd/render.h"

namespace histd::render {

namespace {

using table::KeyDisplay;

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

// Valid UTF-8 (a comm, a string field may hold any bytes; the formats want
// UTF-8): each byte that does not start a well-formed sequence becomes U+FFFD.
std::string utf8(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

// Text as both formats escape it: backslash and newline, and in a label
// value (`quotes`) the double quote; made valid UTF-8 first.
std::string escaped(std::string_view raw, bool quotes) {
  std::string out;
  for (char c : utf8(raw)) {
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

// A key as a label shows it: the form its modifier renders, never a raw
// kernel address (those are hidden as for a reader who may not see them).
std::string key_label(const table::KeyColumn& k, const table::Row& r, const Resolver& res) {
  const Options hide{true};
  if (k.display == KeyDisplay::String) {
    const size_t end = std::min<size_t>(k.offset + k.size, r.key.size());
    const char* s = reinterpret_cast<const char*>(r.key.data() + k.offset);
    return std::string(s, strnlen(s, end - k.offset));
  }
  if (k.display == KeyDisplay::Stacktrace) {
    std::string out;
    for_each_shown_frame(res, k.size / 8, [&](size_t i) { return r.key_number(k.offset + 8 * i); },
                         [&](uint64_t f) {
                           const std::string s = res.symbol_offset(f);
                           if (!out.empty()) out += ';';
                           out += s.empty() ? "?" : s;
                         });
    return out;
  }
  const uint64_t addr = r.key_number(k.offset);
  const uint64_t v = shown(addr, k.address, hide);
  switch (k.display) {
    case KeyDisplay::Hex:
      return fmt::format("{:x}", v);
    case KeyDisplay::Sym:
    case KeyDisplay::SymOffset: {
      const std::string s = k.display == KeyDisplay::Sym ? res.symbol(addr) : res.symbol_offset(addr);
      return s.empty() ? "unknown" : s;
    }
    case KeyDisplay::Execname:
      return std::string(r.comm);
    case KeyDisplay::Syscall: {
      const std::string s = res.syscall_name(v);
      return s.empty() ? "unknown_syscall" : s;
    }
    case KeyDisplay::Log2:
      return fmt::format("2^{}", v);
    case KeyDisplay::Buckets:
      return fmt::format("{}-{}", v, v + k.buckets - 1);
    default:
      return k.is_signed ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v);
  }
}

// The inclusive upper bound of a histogram key's bucket (modifier::key_bounds:
// the kernel's log2 bucket 2^v holds (2^(v-1), 2^v], a .buckets=N bucket v
// holds [v, v+N-1]).
double upper_bound(const table::KeyColumn& k, uint64_t v) {
  const modifier::ModifierInfo* m = modifier::by_key_display(k.display);
  return static_cast<double>(
      modifier::key_bounds(m ? m->transform : modifier::KeyTransform::None, k.buckets, v).upper);
}

std::string number(double v) {
  if (v < 9007199254740992.0) return fmt::format("{}", static_cast<uint64_t>(v));  // exact below 2^53
  return fmt::format("{}", v);
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

}  // namespace

namespace {

class Writer {
 public:
  Writer(const Resolver& res, const MetricsOptions& opt) : res_(res), opt_(opt) {}
  void table(const readout::HistTable& t);
  std::string finish();

 private:
  void family(const std::string& name, const char* type, const std::string& help);
  std::string labels(const std::vector<std::string>& names, const LabelSet& set, const std::string& extra = {}) const;
  void write_series(const std::string& base, const table::Table& tab, int hist_key,
                    const std::vector<std::string>& names, const std::map<LabelSet, Series>& series,
                    const std::string& help);

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
  int hist_key = -1, bucketed = 0;
  for (size_t i = 0; i < tab.keys.size(); ++i)
    if (tab.keys[i].display == KeyDisplay::Log2 || tab.keys[i].display == KeyDisplay::Buckets) {
      hist_key = static_cast<int>(i);
      ++bucketed;
    }
  if (bucketed != 1) hist_key = -1;
  std::vector<std::string> names;
  for (size_t i = 0; i < tab.keys.size(); ++i) {
    if (static_cast<int>(i) == hist_key) continue;
    std::string n = metric_name(tab.keys[i].name);
    while (std::find(names.begin(), names.end(), n) != names.end() || n == "le") n += "_";
    names.push_back(std::move(n));
  }
  std::map<LabelSet, Series> series;
  uint64_t dropped = 0;
  for (size_t e = 0; e < tab.entries(); ++e) {
    const table::Row r = tab.row(e);
    LabelSet set;
    for (size_t i = 0; i < tab.keys.size(); ++i)
      if (static_cast<int>(i) != hist_key) set.values.push_back(key_label(tab.keys[i], r, res_));
    auto it = series.find(set);
    if (it == series.end()) {
      if (series.size() >= opt_.max_series) {
        ++dropped;
        continue;
      }
      it = series.emplace(std::move(set), Series{{}, std::vector<uint64_t>(tab.vals.size(), 0)}).first;
    }
    for (size_t v = 0; v < tab.vals.size() && v < r.vals.size(); ++v) it->second.sums[v] += r.vals[v];
    if (hist_key >= 0) {
      const table::KeyColumn& k = tab.keys[static_cast<size_t>(hist_key)];
      it->second.buckets[upper_bound(k, r.key_number(k.offset))] += r.vals[0];
    }
  }
  const std::string help = fmt::format("{}:{} {}", p.system, p.event, p.trigger_text());
  write_series(base, tab, hist_key, names, series, help);
  stats_.push_back(Stat{base, tab.hits, tab.entries(), tab.drops, t.missed, dropped});
}

void Writer::write_series(const std::string& base, const table::Table& tab, int hist_key,
                          const std::vector<std::string>& names, const std::map<LabelSet, Series>& series,
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
        out_ += fmt::format("{}_bucket{} {}\n", name, labels(names, set, "le=\"" + number(bound) + "\""), cumulative);
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
                    const MetricsOptions& options) {
  Writer w(resolver, options);
  for (const readout::EventHist& e : events)
    for (const readout::HistTable& t : e.tables) w.table(t);
  return w.finish();
}

}  // namespace histd::render
