// SPDX-License-Identifier: GPL-2.0-only
// What the metrics and the page (render::metrics, render::page) share: a
// key's value as a label shows it, which key of a table is its histogram,
// and which values a bucket of that key holds. Private to lib/render.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "histd/render.h"
#include "histd/table.h"

namespace histd::render {

// `s` as valid UTF-8 (a comm or a string field may hold any bytes; HTTP
// bodies and the metrics formats want UTF-8): each byte that does not start
// a well-formed sequence becomes U+FFFD.
std::string valid_utf8(std::string_view s);

// A key as the page captions it: the form its modifier renders ("2^3",
// "200-299", a symbol, "bash [1234]"), never a raw kernel address (those
// read as for a reader who may not see them).
std::string key_caption(const table::KeyColumn& key, const table::Row& row, const Resolver& resolver);

// The table's histogram key: its only .log2 or .buckets key. None when it
// has no such key, or two (both are then plain labels).
std::optional<size_t> histogram_key(const table::Table& table);

// The values a histogram key's bucket holds, both bounds inclusive: the
// kernel's log2 bucket 2^v holds (2^(v-1), 2^v] (bucket 0: 0 and 1); a
// .buckets=N bucket v holds [v, v+N-1]. Doubles: the last log2 bucket's
// bound, 2^64, is past u64 (bounds past 2^53 are approximate).
struct BucketBounds {
  double lower = 0;
  double upper = 0;
};
BucketBounds bucket_bounds(const table::KeyColumn& key, uint64_t bucket);

// A histogram key's bucket as the hist file and a label show it: "2^3",
// "200-299".
std::string bucket_label(const table::KeyColumn& key, uint64_t bucket);

// FNV-1a of `s`: the short, stable hash that names a table (its metric
// family without name=, its id on the page) across restarts and machines.
uint32_t fnv1a32(std::string_view s);

// A bound as the formats print it: exact digits below 2^53.
std::string bound_text(double bound);

}  // namespace histd::render
