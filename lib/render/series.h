// SPDX-License-Identifier: GPL-2.0-only
// A table's entries as metric series (docs/metrics.md): the label sets,
// their sums, and for a histogram its buckets over a fixed set of bounds,
// the same on every host, so that Prometheus can add histograms of many
// hosts by `le` and find a quantile in the right bucket.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "histd/render.h"
#include "histd/table.h"

namespace histd::render {

// A metric or label name: [a-zA-Z_][a-zA-Z0-9_]* (':' is for recording
// rules), anything else an underscore.
std::string metric_name(std::string_view s);

// Appends text as both formats escape it: backslash and newline, and in a
// label value (`quotes`) the double quote; made valid UTF-8 first.
void append_escaped(std::string& out, std::string_view raw, bool quotes);

// The value of every key label of the one series that sums a table's
// label sets past the series cap. Every series of a family then has the
// same label names, as collectors that check them (node_exporter's textfile
// collector) require; a pid or a bucket never reads so.
inline constexpr std::string_view kOverflowValue = "__overflow__";

// The label names of a table's keys but the histogram key (`hist_key`, -1
// for none): each key's, then its companion's (.execname: "<key>_comm"),
// none of them "le" or "tracefs_instance".
std::vector<std::string> label_names(const table::Table& table, int hist_key);

// The upper bounds of a histogram key's buckets, every one whether hit or
// not, up to its format's last_bucket: for .log2 each power of two up to the
// top of the field's type; for .buckets=N the first kLinearBuckets steps
// from 0. Hits past the last bound are in +Inf alone.
std::vector<double> fixed_bounds(const table::KeyColumn& key);

// The samples of one table, one per label set, ready to write: each set's
// label text (`name="value",...`, escaped, no braces) back to back in one
// buffer, its sums per value column, and for a histogram its hits per
// bucket bound. A 100k-series table is then a few allocations.
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

// A table's series after `first` (a tree's tracefs_instance label, or
// nothing). At most `max_series`: past that the label sets with the most
// hits are kept (ties: the lower label values) and the rest are summed into
// one series whose key labels read kOverflowValue, whose number goes to
// `overflowed`. A lone histogram key's table has its one series even
// while empty, so that no bucket's first hit is lost to rate().
Samples table_series(const table::Table& table, int hist_key, std::string_view first,
                     const std::vector<std::string>& names, const Resolver& resolver, size_t max_series,
                     uint64_t& overflowed);

}  // namespace histd::render
