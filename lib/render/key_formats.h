// SPDX-License-Identifier: GPL-2.0-only
// How each output shows a key, one row per display (table::KeyDisplay):
// the hist file's text, hist.json's member, a metric's label and the
// page's buckets read the same row. A new display is a row here and one in
// lib/table/key_display.cpp. Private to lib/render.
#pragma once

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "histd/render.h"
#include "histd/table.h"

namespace histd::render {

// One key of one entry, as a format sees it.
struct KeyValue {
  const table::KeyColumn& column;
  const table::Row& row;
  const Resolver& res;
  const Options opt;  // a copy: a bool, and callers pass temporaries
  uint64_t addr = 0;  // the number the key holds: symbols resolve from it
  uint64_t v = 0;     // what the reader is shown of it (render::shown)

  KeyValue(const table::KeyColumn& k, const table::Row& r, const Resolver& resolver, const Options& options);
  // A String key's bytes, up to its NUL.
  std::string_view text() const;
};

// The steps of a .buckets=N key a metric's histogram has bounds for.
inline constexpr uint64_t kLinearBuckets = 64;

struct KeyFormat {
  table::KeyDisplay display;
  // hist: "name: ..." as the kernel's hist_trigger_entry_print() prints it.
  void (*text)(std::string& out, std::string_view name, const KeyValue& key);
  // hist.json: the key's member in this display (a String's or a Stack's
  // own member; "name.hex" and the like for a modifier's).
  void (*json)(std::string& out, const KeyValue& key);
  // A metric's label, a page's caption: never a raw kernel address.
  std::string (*label)(const KeyValue& key);
  // Bucketed displays (table::KeyDisplayTraits::bucketed): a bucket as the
  // hist file and a label show it ("2^3", "200-299"), the distance between
  // two buckets, and whether the page draws every bucket between the
  // lowest and highest (gaps as gaps) whatever their number.
  std::string (*bucket)(const table::KeyColumn& key, uint64_t bucket) = nullptr;
  uint64_t (*step)(const table::KeyColumn& key) = nullptr;
  bool fills_gaps = false;
  // Bucketed displays: the last bucket a metric's histogram has a bound for,
  // hit or not (every host the same; what is past it counts in +Inf).
  uint64_t (*last_bucket)(const table::KeyColumn& key) = nullptr;
  // Where one label cannot say what the hist line says (.execname: "comm
  // [pid]"), a second one: its name after the key's ("_comm") and its value.
  // The first then holds the number the key is.
  const char* companion_suffix = nullptr;
  std::string (*companion)(const KeyValue& key) = nullptr;
};

const KeyFormat& key_format(table::KeyDisplay display);

// The formats below are compiled fmt equivalents of the kernel's printf
// formats quoted beside them: a big table is mostly these few lines.
template <typename... Args>
void put(std::string& out, const auto& format, const Args&... args) {
  fmt::format_to(std::back_inserter(out), format, args...);
}

// "%<width>llu": the hot path of every table (keys, hitcounts, sums).
inline void put_right(std::string& out, uint64_t v, size_t width) {
  const fmt::format_int digits(v);
  if (digits.size() < width) out.append(width - digits.size(), ' ');
  out.append(digits.data(), digits.size());
}

// %ps / %pS of an address the resolver does not know: the raw address.
std::string or_address(std::string s, uint64_t addr);

// A JSON string; bytes that are not UTF-8 (a comm, a string field) become
// U+FFFD instead of failing the whole document.
std::string json_string(std::string_view s);

// A JSON number, signed or not.
void put_number(std::string& out, uint64_t v, bool is_signed);

}  // namespace histd::render
