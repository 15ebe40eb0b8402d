// SPDX-License-Identifier: GPL-2.0-only
// Every key display's row (lib/render/key_formats.cpp) as each output reads
// it: a row per display, each output given something, and no output of any
// display showing a hidden kernel address. A new display is checked here by
// being a row.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "histd/render.h"
#include "histd/table.h"
#include "render/key_formats.h"

namespace histd::render {
namespace {

using table::KeyColumn;
using table::KeyDisplay;

constexpr uint64_t kAddress = 0xffffffff811ae721;  // an address no resolver knows
constexpr KeyDisplay kLast = KeyDisplay::Stacktrace;

std::vector<KeyDisplay> every_display() {
  std::vector<KeyDisplay> all;
  for (size_t i = 0; i <= static_cast<size_t>(kLast); ++i) all.push_back(static_cast<KeyDisplay>(i));
  return all;
}

// A table of one entry whose only key, of display `d`, holds `word` (a
// stack: `word`, then an end; a string: "bash"), and comm "bash" where the
// display prints one.
table::Table one_key(KeyDisplay d, uint64_t word) {
  table::Table t;
  KeyColumn k;
  k.name = "k";
  k.display = d;
  k.buckets = 100;
  k.size = d == KeyDisplay::Stacktrace ? 16 : 8;
  k.address = table::AddressKind::Pointer;
  t.keys = {k};
  t.vals = {table::ValColumn{"hitcount"}};
  t.key_size = k.size;
  std::vector<uint64_t> key{word, 0};
  if (d == KeyDisplay::String) std::memcpy(key.data(), "bash", 5);
  const std::vector<uint64_t> hits{1};
  // A table that prints comms keeps each entry's (Row::comm).
  t.add({reinterpret_cast<const uint8_t*>(key.data()), k.size}, hits,
        table::key_traits(d).needs_comm ? "bash" : std::string_view());
  return t;
}

TEST(KeyFormats, EveryDisplayHasItsRow) {
  for (const KeyDisplay d : every_display()) {
    const KeyFormat& f = key_format(d);
    EXPECT_EQ(f.display, d);
    EXPECT_EQ(table::key_traits(d).display, d);
    EXPECT_NE(f.text, nullptr);
    EXPECT_NE(f.json, nullptr);
    EXPECT_NE(f.label, nullptr);
    // A bucket has its label, its step and its bounds; nothing else has.
    const bool bucketed = table::key_traits(d).bucketed;
    EXPECT_EQ(f.bucket != nullptr, bucketed) << static_cast<int>(d);
    EXPECT_EQ(f.step != nullptr, bucketed) << static_cast<int>(d);
  }
}

TEST(KeyFormats, EachOutputShowsEveryDisplay) {
  for (const KeyDisplay d : every_display()) {
    const table::Table t = one_key(d, 7);
    const table::Row r = t.row(0);
    const KeyValue key(t.keys[0], r, null_resolver(), Options{});
    std::string text, json;
    key_format(d).text(text, "k", key);
    key_format(d).json(json, key);
    EXPECT_TRUE(text.starts_with("k:")) << text;
    EXPECT_FALSE(json.empty()) << static_cast<int>(d);
    EXPECT_FALSE(key_format(d).label(key).empty()) << static_cast<int>(d);
  }
}

TEST(KeyFormats, NoDisplayShowsAHiddenAddress) {
  const std::vector<std::string> forms{"ffffffff811ae721", "18446744071580493601", "811ae721"};
  for (const KeyDisplay d : every_display()) {
    const table::Table t = one_key(d, kAddress);
    const table::Row r = t.row(0);
    const KeyValue key(t.keys[0], r, null_resolver(), Options{true});
    std::string text, json;
    key_format(d).text(text, "k", key);
    key_format(d).json(json, key);
    const std::string label = key_format(d).label(key);
    for (const std::string& form : forms)
      for (const std::string& out : std::vector<std::string>{text, json, label})
        EXPECT_EQ(out.find(form), std::string::npos) << static_cast<int>(d) << ": " << out;
  }
}

}  // namespace
}  // namespace histd::render
