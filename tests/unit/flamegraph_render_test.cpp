// SPDX-License-Identifier: GPL-2.0-only
// A stack-keyed table's folded stacks and its flame graph on the page
// (render::folded_stacks, render::page; docs/metrics.md "The page"): frames
// root first, hits summed over the other keys, no address ever, a box per
// frame with its share, the one script and its link. Without root.
#include <gtest/gtest.h>

#include <cstring>

#include "histd/readout.h"
#include "histd/render.h"
#include "table_support.h"

namespace histd {
namespace {

using testing::table_of;

// Three kernel functions the fake resolver names, and one it does not.
constexpr uint64_t kEntry = 0xffffffff81e00076, kSyscall = 0xffffffff81c0005d, kSleep = 0xffffffff81c3a210,
                   kPipe = 0xffffffff8137b1c4, kUnknown = 0xffffffffc0de0000;

class FakeResolver : public render::Resolver {
 public:
  std::string symbol(uint64_t a) const override { return name(a); }
  std::string symbol_offset(uint64_t a) const override {
    const std::string n = name(a);
    return n.empty() ? "" : n + "+0x10/0x80";
  }
  std::string syscall_name(uint64_t) const override { return {}; }

 private:
  static std::string name(uint64_t a) {
    switch (a) {
      case kEntry:
        return "entry_SYSCALL_64";
      case kSyscall:
        return "do_syscall_64";
      case kSleep:
        return "do_nanosleep";
      case kPipe:
        return "pipe_read<x>";
      default:
        return "";
    }
  }
};

// An entry of `t` (keys=common_stacktrace[,common_pid]): the frames,
// innermost first, as the BPF side stores them, then the pid.
void add(readout::HistTable& t, std::vector<uint64_t> frames, uint64_t pid, uint64_t hits) {
  std::vector<uint8_t> key(t.table.key_size, 0);
  const table::KeyColumn& s = t.table.keys[0];
  frames.resize(std::min<size_t>(frames.size(), s.size / 8));
  if (!frames.empty()) std::memcpy(key.data() + s.offset, frames.data(), frames.size() * 8);
  if (t.table.keys.size() > 1) std::memcpy(key.data() + t.table.keys[1].offset, &pid, 8);
  const uint64_t v[] = {hits};
  t.table.add(key, v);
  t.table.hits += hits;
}

readout::HistTable two_paths() {
  readout::HistTable t = table_of("hist:keys=common_stacktrace,common_pid");
  add(t, {kSleep, kSyscall, kEntry}, 1, 5);
  add(t, {kSleep, kSyscall, kEntry}, 2, 7);  // the same stack, another pid: one line
  add(t, {kPipe, kSyscall, kEntry}, 1, 3);
  add(t, {kUnknown, kSyscall, kEntry}, 3, 1);
  return t;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(FlameGraphRender, FoldedStacksRootFirstSummedOverOtherKeys) {
  const readout::HistTable t = two_paths();
  FakeResolver res;
  EXPECT_EQ(render::folded_stacks(t.table, res),
            "entry_SYSCALL_64+0x10/0x80;do_syscall_64+0x10/0x80;? 1\n"
            "entry_SYSCALL_64+0x10/0x80;do_syscall_64+0x10/0x80;do_nanosleep+0x10/0x80 12\n"
            "entry_SYSCALL_64+0x10/0x80;do_syscall_64+0x10/0x80;pipe_read<x>+0x10/0x80 3\n");
}

TEST(FlameGraphRender, FoldedStacksNeverShowAnAddress) {
  readout::HistTable t = table_of("hist:keys=common_stacktrace");
  add(t, {kUnknown, 0x00007f0000001000}, 0, 2);
  const std::string folded = render::folded_stacks(t.table, render::null_resolver());
  EXPECT_EQ(folded, "?;? 2\n");
  EXPECT_EQ(folded.find("0x"), std::string::npos);
  EXPECT_EQ(folded.find("ffff"), std::string::npos);
}

TEST(FlameGraphRender, EmptyStacksAndTablesWithoutAStack) {
  readout::HistTable t = table_of("hist:keys=common_stacktrace");
  add(t, {}, 0, 4);
  EXPECT_EQ(render::folded_stacks(t.table, render::null_resolver()), "");
  readout::HistTable plain = table_of("hist:keys=common_pid");
  EXPECT_FALSE(render::stack_key(plain.table));
  EXPECT_EQ(render::folded_stacks(plain.table, render::null_resolver()), "");
}

TEST(FlameGraphRender, TableIdsAreStableAndFindTheirTable) {
  const readout::HistTable t = two_paths();
  const std::string id = render::table_id(t.plan);
  EXPECT_EQ(id.size(), 8u);
  // The size is not part of it: a resize keeps the page's link.
  EXPECT_EQ(render::table_id(table_of("hist:keys=common_stacktrace,common_pid:size=4096").plan), id);
  EXPECT_NE(render::table_id(table_of("hist:keys=common_stacktrace").plan), id);
  readout::EventHist h{"kmem", "kmalloc", {table_of("hist:keys=common_pid"), t}, {}};
  FakeResolver res;
  EXPECT_EQ(render::folded_table({h}, id, res), render::folded_stacks(t.table, res));
  EXPECT_FALSE(render::folded_table({h}, "00000000", res));
  EXPECT_FALSE(render::folded_table({h}, render::table_id(h.tables[0].plan), res));  // no stack key
  EXPECT_EQ(render::folded_event(h, res), render::folded_stacks(t.table, res));
}

TEST(FlameGraphRender, SeveralStackTablesOfAnEventAreHeadedByTheirTrigger) {
  readout::HistTable a = two_paths(), b = table_of("hist:keys=common_stacktrace");
  add(b, {kPipe}, 0, 1);
  readout::EventHist h{"kmem", "kmalloc", {a, b}, {}};
  FakeResolver res;
  EXPECT_EQ(render::folded_event(h, res), "# " + a.plan.trigger_text() + "\n" + render::folded_stacks(a.table, res) +
                                              "# " + b.plan.trigger_text() + "\npipe_read<x>+0x10/0x80 1\n");
}

TEST(FlameGraphRender, ABoxPerFrameWithItsShareRootAtTheBottom) {
  const readout::HistTable t = two_paths();
  readout::EventHist h{"kmem", "kmalloc", {t}, {}};
  const std::string page = render::page({h}, FakeResolver{});
  const std::string id = render::table_id(t.plan);
  EXPECT_NE(page.find("<figure class=\"flame\" id=\"flame-" + id + "\">"), std::string::npos) << page;
  EXPECT_NE(page.find("<a href=\"folded?table=" + id + "\">folded stacks</a>"), std::string::npos);
  // all, entry, do_syscall_64 and the three leaves.
  EXPECT_EQ(count(page, "<svg class=\"fr\""), 6u);
  EXPECT_NE(page.find("<title>all (16 hits, 100.00%)</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>do_nanosleep+0x10/0x80 (12 hits, 75.00%)</title>"), std::string::npos);
  EXPECT_NE(page.find("<title>? (1 hits, 6.25%)</title>"), std::string::npos);
  // Names are escaped, in the title, the box's text and the entries' list alike.
  EXPECT_EQ(count(page, "pipe_read&lt;x&gt;+0x10/0x80"), 3u);
  EXPECT_EQ(page.find("pipe_read<x>"), std::string::npos);
  // The root spans the width at the bottom row; do_nanosleep is 3/4 of it, on top.
  EXPECT_NE(page.find("viewBox=\"0 0 1200 68\""), std::string::npos);
  EXPECT_NE(page.find("x=\"0.00\" y=\"51\" width=\"1200.00\""), std::string::npos);
  EXPECT_NE(page.find("y=\"0\" width=\"900.00\" height=\"16\" data-x="), std::string::npos);
  EXPECT_EQ(page.find("0xffff"), std::string::npos);
}

TEST(FlameGraphRender, TheOneScriptOnlyWithAFlameGraph) {
  const readout::HistTable t = two_paths();
  readout::EventHist h{"kmem", "kmalloc", {t}, {}};
  const std::string page = render::page({h}, FakeResolver{});
  // Exactly the text the exporter hashes, once; its tools hidden until it runs.
  EXPECT_EQ(count(page, "<script"), 1u);
  EXPECT_NE(page.find("<script>" + std::string(render::page_script()) + "</script>\n</body>"), std::string::npos);
  EXPECT_NE(page.find("<p class=\"fg-tools\" hidden>"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  readout::EventHist plain{"kmem", "kmalloc", {table_of("hist:keys=common_pid")}, {}};
  EXPECT_EQ(render::page({plain}, FakeResolver{}).find("<script"), std::string::npos);
  readout::EventHist empty{"kmem", "kmalloc", {table_of("hist:keys=common_stacktrace")}, {}};
  EXPECT_EQ(render::page({empty}, FakeResolver{}).find("<script"), std::string::npos);
}

}  // namespace
}  // namespace histd
