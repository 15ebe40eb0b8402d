// SPDX-License-Identifier: GPL-2.0-only
// The configuration directory's pure stages: a file's lines into
// declarations (or problems with file:line and a caret, the rest still
// read), and the diff of declarations against what histd holds. Error
// goldens use the inline-caret notation: '^' marks the byte the caret must
// be under and is removed before parsing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "histd/config.h"

namespace histd::config {
namespace {

using engine::ConfigItem;
using Kind = ConfigItem::Kind;

Declaration declared(const std::string& line) {
  ParsedFile f = parse_file("t.conf", line);
  EXPECT_TRUE(f.problems.empty()) << line << ": " << (f.problems.empty() ? "" : f.problems[0].text());
  EXPECT_EQ(f.declarations.size(), 1u) << line;
  return f.declarations.empty() ? Declaration{} : f.declarations[0];
}

// The marked line, alone in a file at line 2, must be refused with `code`
// and the caret under the marked byte; the good lines around it still count.
void expect_problem(const std::string& marked, ErrorCode code) {
  const size_t caret = marked.find('^');
  ASSERT_NE(caret, std::string::npos) << marked;
  std::string line = marked;
  line.erase(caret, 1);
  const std::string text = "a:b hist:keys=x\n" + line + "\nwl u64 lat\n";
  ParsedFile f = parse_file("/etc/histd/triggers.d/10-web.conf", text);
  ASSERT_EQ(f.problems.size(), 1u) << line;
  const Problem& p = f.problems[0];
  EXPECT_EQ(error_name(p.diagnostic.code), error_name(code)) << line;
  EXPECT_EQ(p.text(), "/etc/histd/triggers.d/10-web.conf:2: error: " + p.diagnostic.message() + "\n  " + line + "\n  " +
                          std::string(caret, ' ') + "^\n")
      << line;
  ASSERT_EQ(f.declarations.size(), 2u) << line;
  EXPECT_EQ(f.declarations[0].origin.where(), "/etc/histd/triggers.d/10-web.conf:1");
  EXPECT_EQ(f.declarations[1].origin.where(), "/etc/histd/triggers.d/10-web.conf:3");
}

TEST(ConfigParse, LinesOfEachKind) {
  const std::string text =
      "# wakeup latency\n"
      "\n"
      "wakeup_latency  u64 lat; pid_t pid\r\n"
      "   sched:sched_waking   hist:keys=pid:ts0=common_timestamp.usecs  \n"
      "  # indented comment\n"
      "sched:sched_switch enable_hist:sched:sched_waking:2 if prev_pid == 0\n";
  ParsedFile f = parse_file("x.conf", text);
  ASSERT_TRUE(f.problems.empty()) << f.problems[0].text();
  ASSERT_EQ(f.declarations.size(), 3u);
  const Declaration& s = f.declarations[0];
  EXPECT_EQ(s.item.kind, Kind::Synthetic);
  EXPECT_EQ(s.item.event, "wakeup_latency");
  EXPECT_EQ(s.item.text, "wakeup_latency\tu64 lat; pid_t pid");  // as synthetic_events lists it
  EXPECT_EQ(s.origin.where(), "x.conf:3");
  const Declaration& h = f.declarations[1];
  EXPECT_EQ(h.item.kind, Kind::Trigger);
  EXPECT_EQ(h.item.event, "sched:sched_waking");
  EXPECT_EQ(h.item.text, "hist:keys=pid:ts0=common_timestamp.usecs");
  EXPECT_EQ(h.column, 24u);
  EXPECT_EQ(h.origin.where(), "x.conf:4");
  EXPECT_EQ(h.provides, std::vector<std::string>{"$ts0"});
  const Declaration& e = f.declarations[2];
  EXPECT_EQ(e.item.event, "sched:sched_switch");
  EXPECT_EQ(e.item.text, "enable_hist:sched:sched_waking:2 if prev_pid == 0");
  EXPECT_EQ(e.key, "sched:sched_switch enable_hist:sched:sched_waking");
}

TEST(ConfigParse, BadLinesAreReportedWithFileLineAndCaretAndTheRestRead) {
  expect_problem("syscalls:sys_enter_write hist:keys=fd:^junk", ErrorCode::UnknownToken);
  expect_problem("syscalls:sys_enter_write hist:keys=fd if fd 1^2", ErrorCode::FilterInvalidOp);
  expect_problem("syscalls:sys_enter_write ^hsit:keys=fd", ErrorCode::UnknownCommand);
  expect_problem("^hist:keys=fd", ErrorCode::ConfigLine);
  expect_problem("  ^sys/calls:write hist:keys=fd", ErrorCode::ConfigLine);
  expect_problem("syscalls:sys_enter_write^", ErrorCode::ConfigLine);
  expect_problem("syscalls:sys_enter_write ^!hist:keys=fd", ErrorCode::ConfigNotDeclaration);
  expect_problem("syscalls:sys_enter_write hist:keys=fd:^clear", ErrorCode::ConfigNotDeclaration);
  expect_problem("syscalls:sys_enter_write hist:keys=fd:^cont", ErrorCode::ConfigNotDeclaration);
  expect_problem("^!wakeup_latency", ErrorCode::ConfigNotDeclaration);
  expect_problem("^wakeup_latency u64", ErrorCode::SynthInvalidCmd);
  expect_problem("wakeup_latency u64 lat; ^u65 pid", ErrorCode::SynthInvalidType);
}

// Only what shows the fault is echoed: at most 80 bytes of a line, around
// the caret, "..." where it is cut; a short line as it is.
TEST(ConfigParse, AProblemShowsAtMost80BytesOfItsLine) {
  const std::string tail(200, 'x');
  ParsedFile head = parse_file("t.conf", "root:x:0:0:" + tail + "\n");
  ASSERT_EQ(head.problems.size(), 1u);
  EXPECT_EQ(head.problems[0].text(), "t.conf:1: error: " + head.problems[0].diagnostic.message() +
                                         "\n  root:x:0:0:" + std::string(69, 'x') + "...\n  ^\n");
  EXPECT_LE(head.problems[0].diagnostic.command.size(), 83u) << "error_log's Command: is clipped too";
  ParsedFile far = parse_file("t.conf", "syscalls:sys_enter_write hist:name=" + tail + ":keys=fd:junk\n");
  ASSERT_EQ(far.problems.size(), 1u);
  const Problem& p = far.problems[0];
  const std::string shown = p.text().substr(p.text().find('\n') + 3);
  const std::string first = shown.substr(0, shown.find('\n'));
  EXPECT_EQ(first.size(), 83u) << first;
  EXPECT_TRUE(first.starts_with("...x")) << first;
  EXPECT_EQ(shown.substr(shown.find('\n') + 1).find('^') - 2, p.column);
  EXPECT_EQ(first.substr(p.column, 4), "junk") << first;
}

TEST(ConfigParse, KeyLeavesOutSizeAndPause) {
  Declaration a = declared("s:e hist:keys=fd:size=4096:pause");
  EXPECT_EQ(a.key, "s:e hist:keys=fd");
  EXPECT_EQ(a.shape, "4096");
  EXPECT_TRUE(a.paused);
  Declaration b = declared("s:e hist:pause:size=100:keys=fd");
  EXPECT_EQ(b.key, "s:e hist:keys=fd");
  EXPECT_EQ(b.shape, "128");  // the size the kernel makes of it
  EXPECT_EQ(declared("s:e hist:keys=fd").shape, "2048");
  EXPECT_EQ(declared("s:e hist:keys=fd:size=2000").shape, "2048");
  EXPECT_NE(declared("s:e hist:keys=fd if fd == 1").key, a.key);
}

TEST(ConfigParse, DependenciesOnSyntheticEventsAndVariables) {
  Declaration t = declared(
      "sched:sched_switch hist:keys=next_pid:lat=common_timestamp.usecs-$ts0:"
      "onmatch(sched.sched_waking).wakeup_latency($lat,next_pid)");
  EXPECT_EQ(t.uses, (std::vector<std::string>{"synthetic:wakeup_latency", "$lat", "$ts0"}));
  EXPECT_EQ(t.provides, std::vector<std::string>{"$lat"});
  EXPECT_EQ(declared("synthetic:wakeup_latency hist:keys=pid").uses,
            std::vector<std::string>{"synthetic:wakeup_latency"});
}

// ---- diff -------------------------------------------------------------------

std::vector<Declaration> declare(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  ParsedFile f = parse_file("t.conf", text);
  EXPECT_TRUE(f.problems.empty()) << (f.problems.empty() ? "" : f.problems[0].text());
  return f.declarations;
}

// What histd would hold after applying `lines` (in the engine's order:
// synthetic events, then triggers).
std::vector<ConfigItem> held(const std::vector<std::string>& lines) {
  std::vector<ConfigItem> out;
  for (bool synthetic : {true, false})
    for (const Declaration& d : declare(lines))
      if ((d.item.kind == Kind::Synthetic) == synthetic) out.push_back(d.item);
  return out;
}

// The plan as one line per step: "- s:e text", "+ s:e text", "= s:e text"
// (an update), "~" for steps of a change.
std::vector<std::string> steps(const Plan& p) {
  std::vector<std::string> out;
  for (const Step& s : p.steps) {
    const char* op = s.op == Step::Op::Remove ? "-" : s.op == Step::Op::Add ? "+" : "=";
    const ConfigItem& item = s.op == Step::Op::Remove ? s.held : s.declared.item;
    out.push_back(std::string(op) + (s.change ? "~ " : " ") + item.event + " " + item.text);
  }
  return out;
}

TEST(ConfigDiff, SameDeclarationsChangeNothing) {
  const std::vector<std::string> lines = {"wl u64 lat", "s:e hist:keys=fd", "s:e enable_hist:s:f"};
  Plan p = diff(declare(lines), held(lines));
  EXPECT_TRUE(p.steps.empty());
  EXPECT_EQ(p.unchanged, 3u);
}

TEST(ConfigDiff, AddedRemovedChangedInOrder) {
  Plan p = diff(declare({"s:e hist:keys=fd:size=4096", "s:e hist:keys=count", "s:f hist:keys=x:pause"}),
                held({"s:e hist:keys=fd", "s:e hist:keys=gone", "s:f hist:keys=x", "s:e enable_hist:s:f"}));
  EXPECT_EQ(steps(p), (std::vector<std::string>{
                          "- s:e enable_hist:s:f",          // enables first
                          "- s:e hist:keys=gone",           // then hist triggers, newest first
                          "-~ s:e hist:keys=fd",            // the old size goes...
                          "= s:f hist:keys=x:pause",        // the same trigger, paused now: kept
                          "+~ s:e hist:keys=fd:size=4096",  // ...and the new comes, in the files' order
                          "+ s:e hist:keys=count",
                      }));
  EXPECT_EQ(p.unchanged, 0u);
}

TEST(ConfigDiff, OnlyTheWordsChangedKeepsTheTrigger) {
  Plan p = diff(declare({"s:e hist:keys=fd:size=2000"}), held({"s:e hist:keys=fd"}));
  EXPECT_EQ(steps(p), std::vector<std::string>{"= s:e hist:keys=fd:size=2000"});
}

TEST(ConfigDiff, WhatDependsOnAChangeIsReplacedToo) {
  const std::vector<std::string> before = {
      "wl u64 lat",
      "a:w hist:keys=pid:ts0=common_timestamp",
      "a:s hist:keys=pid:lat=common_timestamp-$ts0:onmatch(a.w).wl($lat)",
      "synthetic:wl hist:keys=lat",
      "a:x hist:keys=other",
  };
  std::vector<std::string> after = before;
  after[0] = "wl u64 lat; pid_t pid";                             // the definition changed
  after[1] = "a:w hist:keys=pid:ts0=common_timestamp:size=4096";  // the owner of $ts0 changed
  Plan p = diff(declare(after), held(before));
  EXPECT_EQ(steps(p), (std::vector<std::string>{
                          "-~ synthetic:wl hist:keys=lat",
                          "-~ a:s hist:keys=pid:lat=common_timestamp-$ts0:onmatch(a.w).wl($lat)",
                          "-~ a:w hist:keys=pid:ts0=common_timestamp",
                          "-~ wl wl\tu64 lat",
                          "+~ wl wl\tu64 lat; pid_t pid",
                          "+~ a:w hist:keys=pid:ts0=common_timestamp:size=4096",
                          "+~ a:s hist:keys=pid:lat=common_timestamp-$ts0:onmatch(a.w).wl($lat)",
                          "+~ synthetic:wl hist:keys=lat",
                      }));
  EXPECT_EQ(p.unchanged, 1u);  // a:x
}

TEST(ConfigDiff, DeclaredTwiceIsAProblemAndTheFirstStands) {
  Plan p = diff(declare({"s:e hist:keys=fd", "s:e hist:keys=fd:size=256"}), {});
  EXPECT_EQ(steps(p), std::vector<std::string>{"+ s:e hist:keys=fd"});
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].text(),
            "t.conf:2: error: declared twice: first at t.conf:1\n  s:e hist:keys=fd:size=256\n      ^\n");
}

TEST(ConfigDiff, WithoutRemovalsWhatIsNoLongerDeclaredIsKept) {
  Plan p = diff(declare({"s:e hist:keys=fd:size=4096", "s:e hist:keys=new"}),
                held({"s:e hist:keys=fd", "s:e hist:keys=gone"}), false);
  EXPECT_EQ(steps(p),
            (std::vector<std::string>{"-~ s:e hist:keys=fd", "+~ s:e hist:keys=fd:size=4096", "+ s:e hist:keys=new"}));
  EXPECT_EQ(p.kept, 1u);
}

TEST(ConfigDiff, ASavedDeclarationThatDidNotRestoreIsAppliedAgain) {
  std::vector<ConfigItem> h = held({"s:e hist:keys=fd", "s:e hist:keys=x"});
  h[0].restored = h[1].restored = false;
  // The same: tried again from its saved entry. Changed: that entry goes.
  Plan p = diff(declare({"s:e hist:keys=fd", "s:e hist:keys=x:size=256"}), h);
  EXPECT_EQ(steps(p),
            (std::vector<std::string>{"-~ s:e hist:keys=x", "+ s:e hist:keys=fd", "+~ s:e hist:keys=x:size=256"}));
}

// ---- identity: a trigger by what it is --------------------------------------

// Declarations and held items with the identities the engine would give
// them (engine::ConfigItems::identity, ConfigItem::identity): "" for none.
std::vector<Declaration> with_identities(std::vector<Declaration> ds, const std::vector<std::string>& ids) {
  for (size_t i = 0; i < ds.size() && i < ids.size(); ++i) ds[i].identity = ids[i];
  return ds;
}
std::vector<ConfigItem> held_as(const std::vector<std::string>& lines, const std::vector<std::string>& ids) {
  std::vector<ConfigItem> h = held(lines);
  for (size_t i = 0; i < h.size() && i < ids.size(); ++i) h[i].identity = ids[i];
  return h;
}

TEST(ConfigDiff, TheSameTriggerInOtherWordsIsKept) {
  // `vals=hitcount` spelled out: the engine's identity is the same, so the
  // trigger stays, its words recorded (an update, counted unchanged).
  Plan p = diff(with_identities(declare({"s:e hist:keys=fd:vals=hitcount:sort=hitcount"}), {"I1"}),
                held_as({"s:e hist:keys=fd"}, {"I1"}));
  EXPECT_EQ(steps(p), std::vector<std::string>{"= s:e hist:keys=fd:vals=hitcount:sort=hitcount"});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_TRUE(p.steps[0].reworded);
  // Paused too: an update that pauses it, not a rewording.
  p = diff(with_identities(declare({"s:e hist:key=fd:pause"}), {"I1"}), held_as({"s:e hist:keys=fd"}, {"I1"}));
  EXPECT_EQ(steps(p), std::vector<std::string>{"= s:e hist:key=fd:pause"});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_FALSE(p.steps[0].reworded);
  // Another size is another table, as before: replaced.
  p = diff(with_identities(declare({"s:e hist:key=fd:size=4096"}), {"I1"}), held_as({"s:e hist:keys=fd"}, {"I1"}));
  EXPECT_EQ(steps(p), (std::vector<std::string>{"-~ s:e hist:keys=fd", "+~ s:e hist:key=fd:size=4096"}));
  // Another identity is another trigger, however close the words.
  p = diff(with_identities(declare({"s:e hist:keys=fd.hex"}), {"I2"}), held_as({"s:e hist:keys=fd"}, {"I1"}));
  EXPECT_EQ(steps(p), (std::vector<std::string>{"- s:e hist:keys=fd", "+ s:e hist:keys=fd.hex"}));
}

TEST(ConfigDiff, WithoutAnIdentityTheWordsAreCompared) {
  // A declaration the engine could not plan before the reload (its event
  // not there yet, a variable declared in the same reload) is matched by
  // its words, as before: the same words are unchanged, others are
  // another declaration...
  Plan p = diff(with_identities(declare({"s:e hist:keys=fd", "s:f hist:keys=x:vals=hitcount"}), {"", ""}),
                held_as({"s:e hist:keys=fd", "s:f hist:keys=x"}, {"I1", "I2"}));
  EXPECT_EQ(steps(p), (std::vector<std::string>{"- s:f hist:keys=x", "+ s:f hist:keys=x:vals=hitcount"}));
  EXPECT_EQ(p.unchanged, 1u);
  // ...and so is a saved entry that did not restore (it has no plan).
  std::vector<ConfigItem> h = held({"s:e hist:keys=fd"});
  h[0].restored = false;
  p = diff(with_identities(declare({"s:e hist:keys=fd"}), {"I1"}), h);
  EXPECT_EQ(steps(p), std::vector<std::string>{"+ s:e hist:keys=fd"});  // applied from its saved entry
  // An identity is matched first: the words of one held item cannot take
  // the declaration another held item is by identity.
  p = diff(with_identities(declare({"s:e hist:keys=fd"}), {"I2"}),
           held_as({"s:e hist:keys=fd", "s:e hist:keys=fd.hex"}, {"I1", "I2"}));
  EXPECT_EQ(steps(p), (std::vector<std::string>{"- s:e hist:keys=fd", "= s:e hist:keys=fd"}));
}

TEST(ConfigDiff, TheSameTriggerDeclaredTwiceInOtherWordsIsAProblem) {
  Plan p = diff(with_identities(declare({"s:e hist:keys=fd", "s:e hist:key=fd:vals=hitcount"}), {"I1", "I1"}), {});
  EXPECT_EQ(steps(p), std::vector<std::string>{"+ s:e hist:keys=fd"});
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].text(),
            "t.conf:2: error: declared twice: first at t.conf:1\n  s:e hist:key=fd:vals=hitcount\n      ^\n");
}

TEST(ConfigParse, AHeldItemsDeclarationHasItsIdentity) {
  ConfigItem item{Kind::Trigger, "s:e", "hist:keys=fd", true, "I1"};
  auto d = declaration_of(item);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->identity, "I1");
  EXPECT_EQ(d->key, "s:e hist:keys=fd");
  // A declared line gets one from the engine only (reconcile asks it).
  EXPECT_EQ(declared("s:e hist:keys=fd").identity, "");
}

}  // namespace
}  // namespace histd::config
