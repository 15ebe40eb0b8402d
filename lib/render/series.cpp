// SPDX-License-Identifier: GPL-2.0-only
// A table's entries as metric series: label sets, sums, fixed buckets and
// the one overflow series past the cap.
#include "render/series.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "render/key_formats.h"
#include "render/labels.h"

namespace histd::render {

std::string metric_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

// Most labels are digits or plain names: those are appended as they are.
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

std::vector<std::string> label_names(const table::Table& tab, int hist_key) {
  std::vector<std::string> names;
  auto add = [&](std::string n) {
    while (std::find(names.begin(), names.end(), n) != names.end() || n == "le" || n == "tracefs_instance") n += "_";
    names.push_back(std::move(n));
  };
  for (size_t i = 0; i < tab.keys.size(); ++i) {
    if (static_cast<int>(i) == hist_key) continue;
    add(metric_name(tab.keys[i].name));
    if (const char* suffix = key_format(tab.keys[i].display).companion_suffix)
      add(metric_name(tab.keys[i].name + suffix));
  }
  return names;
}

std::vector<double> fixed_bounds(const table::KeyColumn& k) {
  const KeyFormat& f = key_format(k.display);
  std::vector<double> bounds;
  if (!f.last_bucket || !f.step) return bounds;
  const uint64_t last = f.last_bucket(k), step = f.step(k);
  for (uint64_t v = 0;; v += step) {
    bounds.push_back(bucket_bounds(k, v).upper);
    if (v >= last || v > last - step) break;
  }
  return bounds;
}

namespace {

// The metrics are for anyone who can reach the exporter: kernel addresses
// are hidden as from a reader who may not see them, in sums as in keys.
uint64_t value_shown(const table::Table& tab, const table::Row& r, size_t column) {
  return column < r.vals.size() ? shown(r.vals[column], tab.vals[column].address, Options{true}, true) : 0;
}

// A histogram key's bucket as shown: every bucket of kernel addresses is
// bucket 0, as the hist file shows their keys.
uint64_t bucket_shown(const table::Table& tab, int hist_key, const table::Row& r) {
  const table::KeyColumn& k = tab.keys[static_cast<size_t>(hist_key)];
  return shown(r.key_number(k.offset), k.address, Options{true});
}

// The label values of one entry, in label_names()'s order.
void label_values(const table::Table& tab, int hist_key, const table::Row& r, const Resolver& res,
                  std::vector<std::string>& out) {
  out.clear();
  for (size_t i = 0; i < tab.keys.size(); ++i) {
    if (static_cast<int>(i) == hist_key) continue;
    const KeyValue k(tab.keys[i], r, res, Options{true});
    const KeyFormat& f = key_format(tab.keys[i].display);
    out.push_back(f.label(k));
    if (f.companion) out.push_back(f.companion(k));
  }
}

// One label set's text: `name="value",...`, after `first`.
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

// One entry's label set as append_labels() writes it, each value written
// as it is made: a 100k-series table keeps no values between.
void append_entry_labels(std::string& out, std::string_view first, const std::vector<std::string>& names,
                         const table::Table& tab, const table::Row& r, const Resolver& res) {
  out += first;
  size_t n = 0;
  auto put = [&](const std::string& value) {
    if (n > 0 || !first.empty()) out += ',';
    out += names[n++];
    out += "=\"";
    append_escaped(out, value, true);
    out += '"';
  };
  for (const table::KeyColumn& column : tab.keys) {
    const KeyValue k(column, r, res, Options{true});
    const KeyFormat& f = key_format(column.display);
    put(f.label(k));
    if (f.companion) put(f.companion(k));
  }
}

void append_overflow_labels(std::string& out, std::string_view first, const std::vector<std::string>& names) {
  append_labels(out, first, names, std::vector<std::string>(names.size(), std::string(kOverflowValue)));
}

// Whether each entry is a label set of its own: no histogram key, and no
// key whose rendering can make two values one (a symbol, a hidden address,
// a string's bytes past its end).
bool one_series_per_entry(const table::Table& tab, int hist_key) {
  if (hist_key >= 0) return false;
  for (const table::KeyColumn& k : tab.keys) {
    if (!table::key_traits(k.display).numeric_label || k.address != table::AddressKind::None) return false;
  }
  return true;
}

// One label set and what its entries add up to.
struct Merged {
  std::vector<std::string> values;
  std::vector<uint64_t> sums;
  std::map<double, uint64_t> buckets;
  void add(const Merged& other) {
    for (size_t v = 0; v < sums.size(); ++v) sums[v] += other.sums[v];
    for (const auto& [bound, hits] : other.buckets) buckets[bound] += hits;
  }
};

// Keeps the `keep` sets with the most hits (column 0; ties: the lower label
// values) and folds the others into `overflow`; returns how many it folded.
uint64_t keep_most_hit(std::vector<Merged>& sets, size_t keep, Merged& overflow) {
  if (sets.size() <= keep) return 0;
  std::sort(sets.begin(), sets.end(), [](const Merged& a, const Merged& b) {
    return a.sums[0] != b.sums[0] ? a.sums[0] > b.sums[0] : a.values < b.values;
  });
  for (size_t i = keep; i < sets.size(); ++i) overflow.add(sets[i]);
  const uint64_t folded = sets.size() - keep;
  sets.resize(keep);
  return folded;
}

std::vector<Merged> merge_entries(const table::Table& tab, int hist_key, const Resolver& res) {
  std::vector<Merged> merged;
  // A hash of the label values finds an entry's set (a sorted map cost most
  // of a 100k-series scrape).
  std::unordered_map<std::string, size_t> index;
  std::string id;
  std::vector<std::string> values;
  for (size_t e = 0; e < tab.entries(); ++e) {
    const table::Row r = tab.row(e);
    label_values(tab, hist_key, r, res, values);
    id.clear();
    for (const std::string& v : values) fmt::format_to(std::back_inserter(id), "{}:{}", v.size(), v);
    auto [at, fresh] = index.try_emplace(id, merged.size());
    if (fresh) merged.push_back(Merged{values, std::vector<uint64_t>(tab.vals.size(), 0), {}});
    Merged& m = merged[at->second];
    for (size_t v = 0; v < tab.vals.size(); ++v) m.sums[v] += value_shown(tab, r, v);
    if (hist_key >= 0) {
      const BucketBounds b = bucket_bounds(tab.keys[static_cast<size_t>(hist_key)], bucket_shown(tab, hist_key, r));
      m.buckets[b.upper] += r.vals[0];
    }
  }
  return merged;
}

// Each entry its own series, in the table's order; past the cap the
// most-hit entries (ties: the earlier) and one overflow series.
Samples entries_as_series(const table::Table& tab, std::string_view first, const std::vector<std::string>& names,
                          const Resolver& res, size_t max_series, uint64_t& overflowed) {
  std::vector<size_t> kept(tab.entries());
  std::iota(kept.begin(), kept.end(), size_t{0});
  const bool over = kept.size() > max_series;
  Merged overflow{{}, std::vector<uint64_t>(tab.vals.size(), 0), {}};
  if (over) {
    std::vector<uint64_t> hits(tab.entries());
    for (size_t e = 0; e < hits.size(); ++e) hits[e] = value_shown(tab, tab.row(e), 0);
    std::stable_sort(kept.begin(), kept.end(), [&](size_t a, size_t b) { return hits[a] > hits[b]; });
    for (size_t i = max_series - 1; i < kept.size(); ++i)
      for (size_t v = 0; v < tab.vals.size(); ++v) overflow.sums[v] += value_shown(tab, tab.row(kept[i]), v);
    overflowed = kept.size() - (max_series - 1);
    kept.resize(max_series - 1);
    std::sort(kept.begin(), kept.end());
  }
  Samples series;
  series.columns = tab.vals.size();
  series.ends.reserve(kept.size() + 1);
  series.sums.reserve((kept.size() + 1) * series.columns);
  series.labels.reserve(kept.size() * 16);
  for (size_t e : kept) {
    const table::Row r = tab.row(e);
    append_entry_labels(series.labels, first, names, tab, r, res);
    series.ends.push_back(series.labels.size());
    for (size_t v = 0; v < series.columns; ++v) series.sums.push_back(value_shown(tab, r, v));
  }
  if (over) {
    append_overflow_labels(series.labels, first, names);
    series.ends.push_back(series.labels.size());
    series.sums.insert(series.sums.end(), overflow.sums.begin(), overflow.sums.end());
  }
  return series;
}

}  // namespace

Samples table_series(const table::Table& tab, int hist_key, std::string_view first,
                     const std::vector<std::string>& names, const Resolver& res, size_t max_series,
                     uint64_t& overflowed) {
  overflowed = 0;
  max_series = std::max<size_t>(max_series, 1);
  if (one_series_per_entry(tab, hist_key)) return entries_as_series(tab, first, names, res, max_series, overflowed);
  std::vector<Merged> merged = merge_entries(tab, hist_key, res);
  // A lone histogram's one series is there from the table's start: the
  // first hit of every bucket is then an increase, not a new series.
  if (merged.empty() && hist_key >= 0 && names.empty())
    merged.push_back(Merged{{}, std::vector<uint64_t>(tab.vals.size(), 0), {}});
  Merged overflow{{}, std::vector<uint64_t>(tab.vals.size(), 0), {}};
  overflowed = keep_most_hit(merged, max_series - (merged.size() > max_series ? 1 : 0), overflow);
  std::sort(merged.begin(), merged.end(), [](const Merged& a, const Merged& b) { return a.values < b.values; });
  Samples series;
  series.columns = tab.vals.size();
  for (Merged& m : merged) {
    append_labels(series.labels, first, names, m.values);
    series.ends.push_back(series.labels.size());
    series.sums.insert(series.sums.end(), m.sums.begin(), m.sums.end());
    series.buckets.push_back(std::move(m.buckets));
  }
  if (overflowed > 0) {
    append_overflow_labels(series.labels, first, names);
    series.ends.push_back(series.labels.size());
    series.sums.insert(series.sums.end(), overflow.sums.begin(), overflow.sums.end());
    series.buckets.push_back(std::move(overflow.buckets));
  }
  return series;
}

}  // namespace histd::render
