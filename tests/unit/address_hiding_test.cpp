// SPDX-License-Identifier: GPL-2.0-only
// Kernel addresses for readers who may not see them:
// who may (the kernel's kallsyms_show_value()), which columns may hold one,
// and what hist, hist.json, onmax() text and trace lines show such readers.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "histd/render.h"
#include "histd/symbols.h"
#include "histd/table.h"
#include "histd/trace_buffer.h"
#include "test_support.h"

namespace histd {
namespace {

using table::AddressKind;
using table::KeyColumn;
using table::KeyDisplay;
using table::Table;
using table::ValColumn;
using table::ValDisplay;

constexpr render::Options kHide{true};
constexpr uint64_t kText = 0xffffffff811ae721;  // __kmalloc+0x191 in the fake kallsyms
constexpr uint64_t kHeap = 0xffff888003c4a000;  // a kernel heap pointer (ptr)
constexpr uint64_t kUser = 0x00007ffd1234abc0;  // a user pointer (buf)

class FakeResolver : public render::Resolver {
 public:
  std::string symbol(uint64_t a) const override { return a == kText ? "__kmalloc" : ""; }
  std::string symbol_offset(uint64_t a) const override { return a == kText ? "__kmalloc+0x191/0x1b0" : ""; }
  std::string syscall_name(uint64_t) const override { return {}; }
};

Table one_row(std::vector<KeyColumn> keys, std::vector<ValColumn> vals, std::vector<uint64_t> key,
              std::vector<uint64_t> values) {
  Table t;
  t.keys = std::move(keys);
  t.vals = std::move(vals);
  t.key_size = static_cast<uint32_t>(key.size() * 8);
  t.add({reinterpret_cast<const uint8_t*>(key.data()), key.size() * 8}, values);
  t.hits = values[0];
  return t;
}

TEST(AddressPolicy, KallsymsShowValue) {
  // kptr_restrict 0: shown "for perf" (perf_event_paranoid <= 1) or with CAP_SYSLOG.
  EXPECT_TRUE(symbols::show_kernel_addresses(0, -1, false));
  EXPECT_TRUE(symbols::show_kernel_addresses(0, 1, false));
  EXPECT_FALSE(symbols::show_kernel_addresses(0, 2, false));
  EXPECT_TRUE(symbols::show_kernel_addresses(0, 2, true));
  // 1: CAP_SYSLOG only, whatever perf allows.
  EXPECT_FALSE(symbols::show_kernel_addresses(1, -1, false));
  EXPECT_TRUE(symbols::show_kernel_addresses(1, 3, true));
  // 2: never.
  EXPECT_FALSE(symbols::show_kernel_addresses(2, -1, true));
  // Root always sees them, whatever the sysctls say.
  EXPECT_TRUE(symbols::may_see_kernel_addresses(0, 1));
}

TEST(AddressPolicy, WhichTypesMayHoldAnAddress) {
  EXPECT_EQ(table::address_kind("unsigned long"), AddressKind::Word);
  EXPECT_EQ(table::address_kind("long unsigned int"), AddressKind::Word);
  EXPECT_EQ(table::address_kind("const void *"), AddressKind::Pointer);
  EXPECT_EQ(table::address_kind("struct sk_buff *"), AddressKind::Pointer);
  EXPECT_EQ(table::address_kind("const char *"), AddressKind::Pointer);
  for (const char* t : {"size_t", "u64", "unsigned int", "long", "int", "char[16]", "gfp_t", ""})
    EXPECT_EQ(table::address_kind(t), AddressKind::None) << t;
}

TEST(AddressPolicy, PlanMarksTheColumns) {
  const plan::HistPlan p = testing::plan_ok("hist:keys=call_site,ptr:vals=bytes_req,gfp_flags");
  const Table t = p.columns();
  ASSERT_EQ(t.keys.size(), 2u);
  EXPECT_EQ(t.keys[0].address, AddressKind::Word);
  EXPECT_EQ(t.keys[1].address, AddressKind::Pointer);
  ASSERT_EQ(t.vals.size(), 3u);
  EXPECT_EQ(t.vals[1].address, AddressKind::None);  // size_t
  EXPECT_EQ(t.vals[2].address, AddressKind::Word);  // gfp_flags: unsigned long
  // .sym and stacks are addresses whatever the type; a log2 of one is not.
  EXPECT_EQ(testing::plan_ok("hist:keys=bytes_req.sym").columns().keys[0].address, AddressKind::Pointer);
  EXPECT_EQ(testing::plan_ok("hist:keys=common_stacktrace").columns().keys[0].address, AddressKind::Pointer);
  EXPECT_EQ(testing::plan_ok("hist:keys=call_site.log2").columns().keys[0].address, AddressKind::None);
}

TEST(HideAddresses, KeysInTheKernelHalfReadAsZero) {
  FakeResolver res;
  auto both = [&](KeyColumn k, uint64_t v) {
    k.offset = 0;
    Table t = one_row({k}, {{"hitcount"}}, {v}, {1});
    return std::make_pair(render::render_row(t, 0, res), render::render_row(t, 0, res, kHide));
  };
  auto [shown, hidden] = both({"call_site", 0, 8, false, KeyDisplay::Decimal, 0, AddressKind::Word}, kText);
  EXPECT_EQ(shown, "{ call_site: 18446744071580608289 } hitcount:          1");
  EXPECT_EQ(hidden, "{ call_site:          0 } hitcount:          1");
  std::tie(shown, hidden) = both({"ptr", 0, 8, false, KeyDisplay::Hex, 0, AddressKind::Pointer}, kHeap);
  EXPECT_EQ(shown, "{ ptr: ffff888003c4a000 } hitcount:          1");
  EXPECT_EQ(hidden, "{ ptr: 0 } hitcount:          1");
  // The symbol's name stays, as kallsyms shows names with zero addresses.
  std::tie(shown, hidden) = both({"call_site", 0, 8, false, KeyDisplay::Sym, 0, AddressKind::Pointer}, kText);
  EXPECT_EQ(hidden, "{ call_site: [0] __kmalloc                                     } hitcount:          1");
  std::tie(shown, hidden) = both({"call_site", 0, 8, false, KeyDisplay::SymOffset, 0, AddressKind::Pointer}, kText);
  EXPECT_EQ(hidden, "{ call_site: [0] __kmalloc+0x191/0x1b0                                   } hitcount:          1");
  // An address kallsyms does not know prints as the kernel prints it: 0x0.
  std::tie(shown, hidden) = both({"call_site", 0, 8, false, KeyDisplay::Sym, 0, AddressKind::Pointer}, kHeap);
  EXPECT_EQ(hidden, "{ call_site: [0] 0x0                                           } hitcount:          1");
  // User addresses and numbers that are not addresses stay.
  std::tie(shown, hidden) = both({"buf", 0, 8, false, KeyDisplay::Hex, 0, AddressKind::Pointer}, kUser);
  EXPECT_EQ(hidden, shown);
  std::tie(shown, hidden) = both({"count", 0, 8, false, KeyDisplay::Decimal, 0, AddressKind::None}, kHeap);
  EXPECT_EQ(hidden, shown);
}

TEST(HideAddresses, StackFramesKeepTheirNames) {
  FakeResolver res;
  Table t = one_row({{"common_stacktrace", 0, 24, false, KeyDisplay::Stacktrace, 0, AddressKind::Pointer}},
                    {{"hitcount"}}, {kText, kHeap, 0}, {2});
  EXPECT_EQ(render::render_row(t, 0, res),
            "{ common_stacktrace:\n         __kmalloc+0x191/0x1b0\n"
            "         0xffff888003c4a000\n} hitcount:          2");
  EXPECT_EQ(render::render_row(t, 0, res, kHide),
            "{ common_stacktrace:\n         __kmalloc+0x191/0x1b0\n         0x0\n} hitcount:          2");
}

TEST(HideAddresses, SumsOfPointersAlwaysAndOfWordsInTheKernelHalf) {
  Table t = one_row({{"common_pid", 0, 8, false, KeyDisplay::Decimal}},
                    {{"hitcount"},
                     {"ptr", ValDisplay::Decimal, true, AddressKind::Pointer},
                     {"call_site", ValDisplay::Hex, true, AddressKind::Word},
                     {"gfp_flags", ValDisplay::Decimal, true, AddressKind::Word}},
                    {7}, {3, kUser * 3, kText * 3, 0xcc0});
  EXPECT_EQ(render::render_row(t, 0, render::null_resolver(), kHide),
            "{ common_pid:          7 } hitcount:          3  ptr:          0  call_site:          0  gfp_flags:   "
            "    3264");
}

TEST(HideAddresses, JsonLikeTheText) {
  FakeResolver res;
  Table t = one_row({{"call_site", 0, 8, false, KeyDisplay::Sym, 0, AddressKind::Pointer},
                     {"common_stacktrace", 8, 16, false, KeyDisplay::Stacktrace, 0, AddressKind::Pointer}},
                    {{"hitcount"}, {"ptr", ValDisplay::Decimal, true, AddressKind::Pointer}}, {kText, kText, kHeap},
                    {1, kHeap});
  const std::string json = render::render_json("kmem:kmalloc", {{"hist:keys=call_site.sym [active]", &t}}, res, kHide);
  EXPECT_NE(json.find("\"call_site\": 0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"call_site.sym\": \"__kmalloc\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"__kmalloc+0x191/0x1b0\",\n              0\n"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ptr\": 0\n"), std::string::npos) << json;
  EXPECT_EQ(json.find("18446"), std::string::npos) << json;
  const std::string full = render::render_json("kmem:kmalloc", {{"hist:keys=call_site.sym [active]", &t}}, res);
  EXPECT_NE(full.find(std::to_string(kText)), std::string::npos) << full;
}

TEST(HideAddresses, OnmaxValuesAndSavedFields) {
  const plan::HistPlan p = testing::plan_ok("hist:keys=common_pid:m=call_site:onmax($m).save(call_site,bytes_req)");
  std::vector<uint8_t> record(p.var_record_size + 64, 0);
  for (const plan::ActionPlan& a : p.actions) {
    std::memcpy(record.data() + a.track_offset, &kText, 8);
    for (const plan::SavedField& f : a.saves) {
      const uint64_t v = f.name == "call_site" ? kText : 176;
      std::memcpy(record.data() + f.offset, &v, 8);
    }
  }
  EXPECT_EQ(render::render_tracking(p, record),
            "\n\tmax: 18446744071580608289  call_site: 18446744071580608289  bytes_req:        176");
  EXPECT_EQ(render::render_tracking(p, record, kHide),
            "\n\tmax:          0  call_site:          0  bytes_req:        176");
}

TEST(HideAddresses, TraceLinesKeepBothForms) {
  using synth::SynthField;
  const synth::SynthDefinition def{"alloc",
                                   {SynthField{"unsigned long", "site", SynthField::Kind::Integer, 8, false, 0, 8},
                                    SynthField{"u64", "len", SynthField::Kind::Integer, 8, false, 0, 16}}};
  std::vector<uint8_t> rec(24, 0);
  const uint64_t len = 176;
  std::memcpy(rec.data() + 8, &kText, 8);
  std::memcpy(rec.data() + 16, &len, 8);
  const std::string shown = trace::synth_event_body(def, rec);
  const std::string hidden = trace::synth_event_body(def, rec, nullptr, kHide);
  EXPECT_EQ(shown, "site=18446744071580608289 len=176");
  EXPECT_EQ(hidden, "site=0 len=176");

  trace::TraceBuffer b(1 << 16, true);
  b.append("a " + shown + "\n", "a " + hidden + "\n");
  b.append("plain\n");
  EXPECT_EQ(b.lines(), "a " + shown + "\nplain\n");
  EXPECT_EQ(b.lines(true), "a " + hidden + "\nplain\n");
  // A snapshot swaps the buffers: both forms travel with the lines.
  trace::TraceBuffer snapshot(1 << 16, true);
  snapshot.swap(b);
  EXPECT_NE(snapshot.contents(1, true).find("a " + hidden + "\nplain\n"), std::string::npos);
  EXPECT_EQ(snapshot.written(), 2u);
  EXPECT_EQ(snapshot.consume(std::chrono::milliseconds(0), 4096, true), "a " + hidden + "\nplain\n");
}

}  // namespace
}  // namespace histd
