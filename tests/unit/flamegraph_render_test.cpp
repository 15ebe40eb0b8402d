// SPDX-License-Identifier: GPL-2.0-only
// A stack-keyed table's folded stacks (render::folded_stacks): frames root
// first, hits summed over the other keys, no address ever. Without root.
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
  std::memcpy(key.data() + s.offset, frames.data(), frames.size() * 8);
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

}  // namespace
}  // namespace histd
