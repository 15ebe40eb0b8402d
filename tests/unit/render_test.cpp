// SPDX-License-Identifier: GPL-2.0-only
// Renderer and table goldens: the kernel's exact text for every key and
// value display, ties, empty tables, several tables on one event.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "golden.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "histd/render.h"
#include "histd/table.h"

namespace histd::render {
namespace {

using table::KeyColumn;
using table::KeyDisplay;
using table::Table;
using table::ValColumn;
using table::ValDisplay;

class FakeResolver : public Resolver {
 public:
  std::string symbol(uint64_t a) const override {
    if (a == 0xffffffff811ae721) return "__kmalloc";
    if (a == 0xffffffffa00bf6fe) return "hidraw_send_report [hid]";
    return "";
  }
  std::string symbol_offset(uint64_t a) const override {
    if (a == 0xffffffff811ae721) return "__kmalloc+0x191/0x1b0";
    if (a == 0xffffffff81001000) return "do_one_initcall+0x0/0x200";
    return "";
  }
  std::string syscall_name(uint64_t nr) const override { return nr == 1 ? "sys_write" : ""; }
  bool is_tracing_frame(uint64_t a) const override { return a >= 0xffffffffc0000000; }
};

// An entry as a test writes it: key words, values, comm.
struct Entry {
  std::vector<uint64_t> key;
  std::vector<uint64_t> vals;
  std::string comm;
};

Entry row(std::vector<uint64_t> keys, std::vector<uint64_t> vals, std::string comm = "") {
  return Entry{std::move(keys), std::move(vals), std::move(comm)};
}

Table table_of(std::vector<KeyColumn> keys, std::vector<ValColumn> vals, std::vector<Entry> rows) {
  Table t;
  t.keys = std::move(keys);
  t.vals = std::move(vals);
  t.key_size = static_cast<uint32_t>(t.keys.size() * 8);
  for (const Entry& e : rows) t.key_size = std::max<uint32_t>(t.key_size, static_cast<uint32_t>(e.key.size() * 8));
  for (const Entry& e : rows) {
    t.add({reinterpret_cast<const uint8_t*>(e.key.data()), e.key.size() * 8}, e.vals, e.comm);
    t.hits += e.vals[0];
  }
  table::sort_rows(t);
  return t;
}

void expect_golden(const std::string& name, const std::string& actual) {
  histd::testing::expect_golden("render", name, actual);
}

TEST(Render, SeedKmallocTable) {
  Table t = table_of({{"call_site", 0, 8, false, KeyDisplay::Decimal}}, {{"hitcount"}, {"bytes_req"}},
                     {row({18446744072106379007ULL}, {1, 176}), row({18446744071580795365ULL}, {3, 144}),
                      row({18446744072099568646ULL}, {1676, 33520})});
  expect_golden("kmalloc.txt",
                render_event({{"hist:keys=call_site:vals=hitcount,bytes_req:sort=hitcount:size=2048 [active]", &t}},
                             null_resolver()));
}

TEST(Render, EveryKeyDisplay) {
  FakeResolver res;
  auto one = [&](KeyColumn k, uint64_t v, std::string comm = "") {
    Table t = table_of({k}, {{"hitcount"}}, {row({v}, {1}, comm)});
    return render_row(t, 0, res);
  };
  EXPECT_EQ(one({"call_site", 0, 8, false, KeyDisplay::Hex}, 0xffffffffa026b291),
            "{ call_site: ffffffffa026b291 } hitcount:          1");
  EXPECT_EQ(one({"call_site", 0, 8, false, KeyDisplay::Sym}, 0xffffffffa00bf6fe),
            "{ call_site: [ffffffffa00bf6fe] hidraw_send_report [hid]                      } hitcount:          1");
  EXPECT_EQ(one({"call_site", 0, 8, false, KeyDisplay::Sym}, 0x1234),
            "{ call_site: [1234] 0x1234                                        } hitcount:          1");
  EXPECT_EQ(one({"call_site", 0, 8, false, KeyDisplay::SymOffset}, 0xffffffff811ae721),
            "{ call_site: [ffffffff811ae721] __kmalloc+0x191/0x1b0                                   } hitcount:   "
            "       1");
  EXPECT_EQ(one({"common_pid", 0, 8, true, KeyDisplay::Execname}, 4242, "bash"),
            "{ common_pid: bash            [      4242] } hitcount:          1");
  EXPECT_EQ(one({"id", 0, 8, false, KeyDisplay::Syscall}, 1),
            "{ id: sys_write                     [  1] } hitcount:          1");
  EXPECT_EQ(one({"id", 0, 8, false, KeyDisplay::Syscall}, 999),
            "{ id: unknown_syscall               [999] } hitcount:          1");
  EXPECT_EQ(one({"bytes_req", 0, 8, false, KeyDisplay::Log2}, 7), "{ bytes_req: ~ 2^7  } hitcount:          1");
  EXPECT_EQ(one({"bytes_req", 0, 8, false, KeyDisplay::Buckets, 100}, 200),
            "{ bytes_req: ~ 200-299 } hitcount:          1");
  EXPECT_EQ(one({"nr", 0, 8, true, KeyDisplay::Decimal}, static_cast<uint64_t>(-1)),
            "{ nr: 18446744073709551615 } hitcount:          1");
}

TEST(Render, StringAndStackKeys) {
  Table t;
  t.keys = {{"comm", 0, 16, false, KeyDisplay::String}};
  t.vals = {{"hitcount"}};
  t.key_size = 16;
  const uint8_t bash[16] = {'b', 'a', 's', 'h'};
  const uint64_t three = 3;
  t.add(bash, {&three, 1});
  EXPECT_EQ(render_row(t, 0, null_resolver()),
            "{ comm: bash                                               } hitcount:          3");

  FakeResolver res;
  Table s = table_of({{"common_stacktrace", 0, 24, false, KeyDisplay::Stacktrace}}, {{"hitcount"}},
                     {row({0xffffffff811ae721, 0xffffffff81001000, 0}, {2})});
  EXPECT_EQ(render_row(s, 0, res),
            "{ common_stacktrace:\n"
            "         __kmalloc+0x191/0x1b0\n"
            "         do_one_initcall+0x0/0x200\n"
            "} hitcount:          2");

  // A stack taken on a raw tracepoint begins in BPF: those frames are not
  // shown (a later one is, and a stack of nothing else is empty).
  Table raw = table_of({{"common_stacktrace", 0, 40, false, KeyDisplay::Stacktrace}}, {{"hitcount"}},
                       {row({0xffffffffc0001000, 0xffffffffc0002000, 0xffffffff811ae721, 0xffffffffc0003000, 0}, {2}),
                        row({0xffffffffc0001000, 0, 0, 0, 0}, {1})});
  EXPECT_EQ(render_row(raw, 1, res),
            "{ common_stacktrace:\n"
            "         __kmalloc+0x191/0x1b0\n"
            "         0xffffffffc0003000\n"
            "} hitcount:          2");
  EXPECT_EQ(render_row(raw, 0, res), "{ common_stacktrace:\n} hitcount:          1");
}

TEST(Render, ValueDisplays) {
  Table t = table_of(
      {{"pid", 0, 8, false, KeyDisplay::Decimal}},
      {{"hitcount"}, {"runtime", ValDisplay::Percent}, {"runtime", ValDisplay::Graph}, {"len", ValDisplay::Hex}},
      {row({1}, {1, 1, 1, 255}), row({2}, {3, 3, 3, 16})});
  EXPECT_EQ(render_row(t, 0, null_resolver()),
            "{ pid:          1 } hitcount:          1  runtime (%):  25.00  runtime:               ######  len:     "
            "    ff");
  EXPECT_EQ(render_row(t, 1, null_resolver()),
            "{ pid:          2 } hitcount:          3  runtime (%):  75.00  runtime: ####################  len:     "
            "    10");
  t.nohitcount = true;
  t.vals[1].printed = false;
  EXPECT_EQ(render_row(t, 0, null_resolver()),
            "{ pid:          1 }  runtime:               ######  len:         ff");  // two spaces, as the kernel
  Table zero = table_of({{"pid", 0, 8, false, KeyDisplay::Decimal}}, {{"hitcount"}, {"x", ValDisplay::Percent}},
                        {row({1}, {1, 0})});
  EXPECT_EQ(render_row(zero, 0, null_resolver()), "{ pid:          1 } hitcount:          1  x (%):[ERROR]");
}

TEST(Render, SeveralTablesAndAnEmptyOne) {
  Table a = table_of({{"skbaddr", 0, 8, false, KeyDisplay::Hex}}, {{"hitcount"}, {"len"}},
                     {row({0xffff88009fd2c300}, {1, 7212}), row({0xffff8800d2bcdc00}, {2, 24420})});
  Table empty = table_of({{"skbaddr", 0, 8, false, KeyDisplay::Hex}}, {{"hitcount"}, {"len"}}, {});
  expect_golden(
      "netif_receive_skb.txt",
      render_event({{"hist:keys=skbaddr.hex:vals=hitcount,len:sort=hitcount:size=2048 if len > 4096 [active]", &a},
                    {"hist:keys=skbaddr.hex:vals=hitcount,len:sort=hitcount:size=2048 if len < 0 [active]", &empty}},
                   null_resolver()));
}

}  // namespace
}  // namespace histd::render

namespace histd::table {
namespace {

TEST(Table, MergePerCpuWrapsLikeU64) {
  std::vector<uint64_t> buf = {1, 2, UINT64_MAX, 5, 3, 4, 1, 1};  // 4 CPUs x 2 values
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(buf.data()), buf.size() * 8);
  std::vector<uint64_t> sum(2, 99);
  merge_percpu(bytes, 2, 4, 16, sum);
  EXPECT_EQ(sum, (std::vector<uint64_t>{4, 12}));
  merge_percpu(bytes, 2, 1, 16, sum);
  EXPECT_EQ(sum, (std::vector<uint64_t>{1, 2}));
  // A wider stride (a comm after the values) skips the bytes between copies.
  merge_percpu(bytes, 1, 2, 32, sum);
  EXPECT_EQ(sum, (std::vector<uint64_t>{4, 0}));
}

// What a hot slot held is added to its key's entry, wrapping like u64,
// before or after sorting (entry i of the current order).
TEST(Table, AddValuesToAnEntry) {
  Table t;
  t.key_size = 8;
  t.vals = {{"hitcount"}, {"bytes"}};
  t.sort = {{SortColumn::Kind::Value, 0, false}};
  for (uint64_t key : {7u, 3u}) {
    const uint64_t vals[2] = {key, UINT64_MAX};
    t.add({reinterpret_cast<const uint8_t*>(&key), 8}, vals);
  }
  const uint64_t more[2] = {10, 2};
  t.add_values(0, more);  // key 7
  EXPECT_EQ(t.row(0).vals[0], 17u);
  EXPECT_EQ(t.row(0).vals[1], 1u);
  sort_rows(t);  // hitcount ascending: key 3 first
  t.add_values(0, more);
  EXPECT_EQ(t.row(0).key_number(0), 3u);
  EXPECT_EQ(t.row(0).vals[0], 13u);
  EXPECT_EQ(t.row(1).vals[0], 17u);
}

struct KeyRow {
  int64_t key;
  uint64_t hits, val;
};

void fill(Table& t, const std::vector<KeyRow>& rows) {
  for (const KeyRow& r : rows) {
    const uint64_t vals[2] = {r.hits, r.val};
    t.add({reinterpret_cast<const uint8_t*>(&r.key), 8}, vals);
  }
}

TEST(Table, SortOrders) {
  Table t;
  t.keys = {{"k", 0, 8, true, KeyDisplay::Decimal}};
  t.vals = {{"hitcount"}, {"v"}};
  t.key_size = 8;
  const std::vector<KeyRow> rows = {{5, 2, 10}, {-1, 2, 30}, {3, 1, 30}, {0, 2, 10}};
  fill(t, rows);
  auto keys = [&] {
    std::vector<int64_t> out;
    for (size_t i = 0; i < t.entries(); ++i) {
      int64_t k;
      std::memcpy(&k, t.row(i).key.data(), 8);
      out.push_back(k);
    }
    return out;
  };
  sort_rows(t);  // hitcount ascending; ties by key bytes
  EXPECT_EQ(keys(), (std::vector<int64_t>{3, 0, 5, -1}));
  t.sort = {{SortColumn::Kind::Key, 0, false}};
  sort_rows(t);  // signed key
  EXPECT_EQ(keys(), (std::vector<int64_t>{-1, 0, 3, 5}));
  t.sort = {{SortColumn::Kind::Value, 1, true}, {SortColumn::Kind::Key, 0, true}};
  sort_rows(t);  // sort within a sort
  EXPECT_EQ(keys(), (std::vector<int64_t>{3, -1, 5, 0}));
  Table reversed;
  reversed.keys = t.keys;
  reversed.vals = t.vals;
  reversed.sort = t.sort;
  reversed.key_size = 8;
  fill(reversed, {rows.rbegin(), rows.rend()});
  t = reversed;
  sort_rows(t);  // independent of the input order
  EXPECT_EQ(keys(), (std::vector<int64_t>{3, -1, 5, 0}));
}

// Strings that agree in their first 8 bytes, and keys that agree in theirs,
// are still ordered by the rest (the sort compares precomputed words first).
TEST(Table, SortOrdersBeyondTheFirstEightBytes) {
  Table t;
  t.keys = {{"comm", 0, 16, false, KeyDisplay::String}, {"n", 16, 8, false, KeyDisplay::Decimal}};
  t.vals = {{"hitcount"}};
  t.key_size = 24;
  auto add = [&](const char* comm, uint64_t n, uint64_t hits) {
    uint8_t key[24] = {};
    std::memcpy(key, comm, std::strlen(comm));
    std::memcpy(key + 16, &n, 8);
    t.add(key, {&hits, 1});
  };
  add("kworker/1:2", 1, 5);
  add("kworker/1:10", 2, 5);
  add("kworker/1:2", 0, 5);
  add("kworker", 3, 5);
  auto order = [&] {
    std::vector<std::string> out;
    for (size_t i = 0; i < t.entries(); ++i) {
      const Row r = t.row(i);
      uint64_t n;
      std::memcpy(&n, r.key.data() + 16, 8);
      out.push_back(std::string(reinterpret_cast<const char*>(r.key.data())) + "/" + std::to_string(n));
    }
    return out;
  };
  t.sort = {{SortColumn::Kind::Key, 0, false}};
  sort_rows(t);  // strcmp order, then the key bytes (n) on equal strings
  EXPECT_EQ(order(), (std::vector<std::string>{"kworker/3", "kworker/1:10/2", "kworker/1:2/0", "kworker/1:2/1"}));
  t.sort = {{SortColumn::Kind::Key, 0, true}};
  sort_rows(t);  // descending strings; ties still ascending by key bytes
  EXPECT_EQ(order(), (std::vector<std::string>{"kworker/1:2/0", "kworker/1:2/1", "kworker/1:10/2", "kworker/3"}));
  t.sort = {};
  sort_rows(t);  // equal hitcounts: the key bytes decide, past the first 8
  EXPECT_EQ(order(), (std::vector<std::string>{"kworker/3", "kworker/1:10/2", "kworker/1:2/0", "kworker/1:2/1"}));
}

// Big tables take the radix path: every adjacent pair must still be in the
// documented order, for each kind of sort column.
TEST(Table, BigTablesSortLikeSmallOnes) {
  std::mt19937_64 rng(7);
  for (const std::vector<SortColumn>& sort :
       std::vector<std::vector<SortColumn>>{{},
                                            {{SortColumn::Kind::Key, 0, false}},
                                            {{SortColumn::Kind::Key, 1, true}},
                                            {{SortColumn::Kind::Value, 1, true}, {SortColumn::Kind::Key, 2, false}}}) {
    Table t;
    t.keys = {{"n", 0, 8, true, KeyDisplay::Decimal},
              {"s", 8, 16, false, KeyDisplay::String},
              {"m", 24, 8, false, KeyDisplay::Decimal}};
    t.vals = {{"hitcount"}, {"v"}};
    t.key_size = 32;
    t.sort = sort;
    for (int i = 0; i < 5000; ++i) {
      uint8_t key[32] = {};
      const int64_t n = static_cast<int64_t>(rng() % 7) - 3;
      std::memcpy(key, &n, 8);
      const std::string s = "name-" + std::to_string(rng() % 5) + "-" + std::to_string(rng() % 40);
      std::memcpy(key + 8, s.data(), std::min<size_t>(s.size(), 15));
      const uint64_t m = i;  // keys stay distinct
      std::memcpy(key + 24, &m, 8);
      const uint64_t vals[2] = {rng() % 3, rng() % 4};
      t.add(key, vals);
    }
    sort_rows(t);
    auto column = [&](const Row& r, const SortColumn& c) -> std::pair<int64_t, std::string> {
      if (c.kind == SortColumn::Kind::Value) return {static_cast<int64_t>(r.vals[c.index]), ""};
      const KeyColumn& k = t.keys[c.index];
      if (k.display == KeyDisplay::String)
        return {0, std::string(reinterpret_cast<const char*>(r.key.data() + k.offset))};
      int64_t v;
      std::memcpy(&v, r.key.data() + k.offset, 8);
      return {v, ""};
    };
    std::vector<SortColumn> order = sort.empty() ? std::vector<SortColumn>{{SortColumn::Kind::Value, 0, false}} : sort;
    for (size_t i = 1; i < t.entries(); ++i) {
      const Row a = t.row(i - 1), b = t.row(i);
      int cmp = 0;
      for (const SortColumn& c : order) {
        const auto x = column(a, c), y = column(b, c);
        cmp = x < y ? -1 : y < x ? 1 : 0;
        if (c.descending) cmp = -cmp;
        if (cmp) break;
      }
      if (!cmp) cmp = std::memcmp(a.key.data(), b.key.data(), 32) < 0 ? -1 : 1;
      ASSERT_LT(cmp, 0) << "sort of " << sort.size() << " columns: entries " << i - 1 << " and " << i
                        << " out of order: " << column(a, order[0]).first << "/" << column(a, order[0]).second << " vs "
                        << column(b, order[0]).first << "/" << column(b, order[0]).second;
    }
  }
}

}  // namespace
}  // namespace histd::table

namespace histd::render {
namespace {

// The writer prints what nlohmann::json's dump(2) would for the same
// document: parsing and re-dumping every shape gives the same text back.
TEST(RenderJson, TextIsNlohmannsPrettyPrint) {
  FakeResolver res;
  Table stacks = table_of({{"common_stacktrace", 0, 24, false, KeyDisplay::Stacktrace}}, {{"hitcount"}},
                          {row({0xffffffff811ae721, 0x1234, 0}, {2}), row({0, 0, 0}, {1})});
  Table every =
      table_of({{"call_site", 0, 8, false, KeyDisplay::Sym},
                {"off", 8, 8, false, KeyDisplay::SymOffset},
                {"id", 16, 8, false, KeyDisplay::Syscall},
                {"len", 24, 8, false, KeyDisplay::Log2},
                {"b", 32, 8, false, KeyDisplay::Buckets, 10},
                {"h", 40, 8, false, KeyDisplay::Hex},
                {"n", 48, 8, true, KeyDisplay::Decimal}},
               {{"hitcount"},
                {"runtime", ValDisplay::Percent},
                {"runtime", ValDisplay::Graph},
                {"hidden", ValDisplay::Decimal, false}},
               {row({0xffffffffa00bf6fe, 0xffffffff811ae721, 1, 7, 20, 255, static_cast<uint64_t>(-5)}, {3, 9, 9, 1}),
                row({1, 2, 999, 0, 0, 0, 0}, {1, 1, 1, 1})});
  Table strings;
  strings.keys = {{"comm", 0, 16, false, KeyDisplay::String}, {"pid", 16, 8, true, KeyDisplay::Execname}};
  strings.vals = {{"hitcount"}};
  strings.key_size = 24;
  strings.nohitcount = true;
  for (const char* name : {"a\"b\\c", "tab\there", "\xff\xfe bad utf-8", "\u00e9t\u00e9"}) {
    uint8_t key[24] = {};
    std::memcpy(key, name, std::min<size_t>(std::strlen(name), 15));
    const uint64_t one = 1;
    strings.add(key, {&one, 1}, name);
  }
  Table empty = table_of({{"pid", 0, 8, false, KeyDisplay::Decimal}}, {{"hitcount"}}, {});
  const std::string json = render_json("sys:\"ev\"",
                                       {{"hist:keys=common_stacktrace [active]", &stacks, {}, plan::MapMemory{1, 2, 3}},
                                        {"hist:keys=... [paused]", &every},
                                        {"hist:keys=comm,pid.execname:nohitcount [active]", &strings},
                                        {"hist:keys=pid [active]", &empty}},
                                       res);
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(json, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  EXPECT_EQ(doc["tables"][0]["entries"][1]["keys"]["common_stacktrace"],
            nlohmann::json::parse(R"(["__kmalloc+0x191/0x1b0", 4660])"));
  EXPECT_EQ(doc["tables"][1]["entries"][1]["keys"]["n"], -5);  // hitcount 3: after the other entry
  EXPECT_EQ(doc["tables"][1]["entries"][1]["keys"]["b.buckets"], "20-29");
  EXPECT_FALSE(doc["tables"][1]["entries"][1]["values"].contains("hidden"));
  EXPECT_EQ(doc["tables"][2]["entries"][0]["values"], nlohmann::json::object());
  EXPECT_EQ(doc["tables"][3]["entries"], nlohmann::json::array());
  EXPECT_EQ(render_json("a:b", {}, res), "{\n  \"event\": \"a:b\",\n  \"tables\": []\n}\n");
}

TEST(RenderJson, NumbersAndRenderedFormsSideBySide) {
  FakeResolver res;
  Table t = table_of({{"common_pid", 0, 8, true, KeyDisplay::Execname}, {"id", 8, 8, false, KeyDisplay::Syscall}},
                     {{"hitcount"}, {"fd"}}, {row({42, 1}, {5, 3}, "bash")});
  t.key_size = 16;
  const std::string j = render_json("raw_syscalls:sys_enter", {{"hist:keys=... [active]", &t}}, res);
  EXPECT_EQ(j,
            "{\n"
            "  \"event\": \"raw_syscalls:sys_enter\",\n"
            "  \"tables\": [\n"
            "    {\n"
            "      \"entries\": [\n"
            "        {\n"
            "          \"keys\": {\n"
            "            \"common_pid\": 42,\n"
            "            \"common_pid.execname\": \"bash\",\n"
            "            \"id\": 1,\n"
            "            \"id.syscall\": \"sys_write\"\n"
            "          },\n"
            "          \"values\": {\n"
            "            \"fd\": 3,\n"
            "            \"hitcount\": 5\n"
            "          }\n"
            "        }\n"
            "      ],\n"
            "      \"totals\": {\n"
            "        \"dropped\": 0,\n"
            "        \"entries\": 1,\n"
            "        \"hits\": 5,\n"
            "        \"missed\": 0\n"
            "      },\n"
            "      \"trigger\": \"hist:keys=... [active]\"\n"
            "    }\n"
            "  ]\n"
            "}\n");
}

// Events the kernel's BPF recursion guard kept from histd's programs: one
// line after the kernel's Totals, only when there are any, so that the text
// is the kernel's byte for byte otherwise; always in the JSON totals.
TEST(Render, MissedEventsFollowTheTotalsOnlyWhenThereAreAny) {
  FakeResolver res;
  Table t = table_of({{"fd", 0, 8, false, KeyDisplay::Decimal}}, {{"hitcount"}}, {row({3}, {5})});
  t.hits = 5;
  Section s{"hist:keys=fd [active]", &t};
  const std::string none = render_table(s, res);
  EXPECT_TRUE(none.ends_with("\nTotals:\n    Hits: 5\n    Entries: 1\n    Dropped: 0\n")) << none;
  s.missed = 7;
  const std::string some = render_table(s, res);
  EXPECT_EQ(some, none + "    Missed: 7\n");
  const auto doc = nlohmann::json::parse(render_json("a:b", {s}, res));
  EXPECT_EQ(doc["tables"][0]["totals"]["missed"], 7);
  EXPECT_EQ(doc["tables"][0]["totals"]["hits"], 5);
}

}  // namespace
}  // namespace histd::render
