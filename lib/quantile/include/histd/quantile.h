// SPDX-License-Identifier: GPL-2.0-only
// Percentiles of a table's distribution (histctl show --percentiles, watch):
// the rows' numeric key (a .log2 or .buckets=N bucket, or a plain number)
// weighted by the rows' hitcount, per label set (the table's other keys).
// Each percentile is the bucket that holds it, as the kernel bucketed the
// values (modifier::key_bounds), and an estimate inside that bucket by
// linear interpolation; exact when the bucket holds one value. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "histd/modifier.h"
#include "histd/result.h"

namespace histd::quantile {

// One percentile asked for, held exactly: p in millionths of a percent
// (99.9 -> 99'900'000), in (0, 100'000'000].
struct Percentile {
  uint64_t millionths = 0;
  // "99.9", "50": the shortest decimal form (no trailing zeros).
  std::string text() const;
  double value() const { return static_cast<double>(millionths) / 1e6; }
  friend bool operator==(const Percentile&, const Percentile&) = default;
};

inline constexpr uint64_t kHundredPercent = 100'000'000;
inline constexpr size_t kMaxDecimals = 6;

// A bad list: the byte offset in it of the item (or of the list, when it is
// empty) and why.
struct ListError {
  size_t position = 0;
  std::string message;
  friend bool operator==(const ListError&, const ListError&) = default;
};

// "50,90,99,99.9": comma-separated decimal numbers (blanks around an item
// allowed), each in (0, 100] with at most kMaxDecimals decimals, in the
// order given.
Result<std::vector<Percentile>, ListError> parse_list(std::string_view text);

// How a row's key stands for values (modifier::key_bounds). A plain key may
// be signed: its values then order as int64 (bit patterns in the u64s).
struct Scale {
  modifier::KeyTransform transform = modifier::KeyTransform::None;
  uint64_t buckets = 0;  // Buckets: N
  bool is_signed = false;
};

// One table entry: its label set (any text that is equal for equal label
// sets), its key's stored value, its hitcount.
struct Row {
  std::string labels;
  uint64_t key = 0;
  uint64_t hits = 0;
};

struct Estimate {
  Percentile percentile;
  modifier::KeyBounds bucket;  // the values the bucket holds, both ends included
  // Where in the bucket, by linear interpolation from its lower bound (at
  // none of its hits) to its upper one (at all of them). Signed keys as
  // int64.
  double estimate = 0;
  bool exact = false;  // the bucket holds one value: the percentile is it
  friend bool operator==(const Estimate&, const Estimate&) = default;
};

struct LabelSet {
  std::string labels;
  uint64_t hits = 0;  // summed over its rows (saturating)
  // One per percentile asked for, in that order; none when hits is 0.
  std::vector<Estimate> estimates;
  friend bool operator==(const LabelSet&, const LabelSet&) = default;
};

// The percentiles of each label set, in the order the label sets first
// appear in `rows`. A percentile p is in the first bucket (ascending) at
// which the hits so far reach p% of the label set's hits (the nearest-rank
// definition: at least p% of the hits are at or below it), compared
// exactly.
std::vector<LabelSet> percentiles(std::span<const Row> rows, const Scale& scale, std::span<const Percentile> wanted);

}  // namespace histd::quantile
