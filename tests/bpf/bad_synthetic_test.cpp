// SPDX-License-Identifier: GPL-2.0-only
// The bad-input matrix, synthetic_events part: malformed definitions and
// removals written through Engine::write_synthetic, each refused with the
// kernel's text (trace_events_synth.c) and a caret at the exact byte in the
// error_log, or with the kernel's errno and no log entry where the kernel
// logs nothing (!nosuch, a busy event), and none changing a synthetic event,
// a trigger, a table or a count. Inline-caret notation as in
// bad_input_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bpf_test_support.h"

namespace histd::testing {
namespace {

struct LoggedCase {
  std::string marked;  // '^' marks the caret's byte and is removed before writing
  std::string text;    // error text after "error: "
  int err = EINVAL;
};

std::string many_fields(int n) {
  std::string out = "^many";
  for (int i = 0; i < n; ++i) out += (i ? "; u64 f" : " u64 f") + std::to_string(i);
  return out;
}

// lat_ev and free_ev exist when these run (see the fixture below).
const std::vector<LoggedCase> kLogged = {
    // names: a letter or '_', then letters, digits, '_'
    {"^1ev u64 a", "Illegal name"},
    {"^mye-vent u64 a", "Illegal name"},
    {"^waking+wakeup_latency u64 a", "Illegal name"},
    {"^ev.x u64 a", "Illegal name"},
    {"^ev[2] u64 a", "Illegal name"},
    {"^\xc3\xa9v u64 a", "Illegal name"},
    {"ev u64 ^1a", "Illegal name"},
    {"ev u64 ^a-b", "Illegal name"},
    {"ev u64 ^a.b", "Illegal name"},
    {"ev char ^s]", "Illegal name"},
    {"ev u64 ^[4]", "Illegal name"},
    {"ev char ^st-r[]", "Illegal name"},
    // types
    {"ev ^chr a", "Invalid type"},
    {"ev ^U64 a", "Invalid type"},
    {"ev ^size_t a", "Invalid type"},
    {"ev ^float a", "Invalid type"},
    {"ev unsigned ^short a", "Invalid type"},
    {"ev unsigned ^u64 a", "Invalid type"},
    {"ev ^u64 a[4]", "Invalid type"},
    {"ev ^u64[] a", "Invalid type"},
    {"ev ^char[257] s", "Invalid type"},
    {"ev ^char[x] s", "Invalid type"},
    {"ev u64 a; ^double b", "Invalid type"},
    {"ev ^unsigned a", "Incomplete type"},
    {"ev u64 a; ^unsigned int", "Incomplete type"},
    {"ev u64 a ^unsigned", "Incomplete type"},
    // array sizes: char[N], N <= 256, three characters at most
    {"ev char ^s[257]", "Invalid array specification"},
    {"ev char ^s[1000]", "Invalid array specification"},
    {"ev char ^s[kdjdk]", "Invalid array specification"},
    {"ev char ^s[; int v", "Invalid array specification"},
    {"ev char ^s[-1]", "Invalid array specification"},
    {"ev char ^s[0x10]", "Invalid array specification"},
    {"ev char ^s[08]", "Invalid array specification"},
    {"ev char ^s[+]", "Invalid array specification"},
    {"ev char ^s[16]x", "Invalid array specification"},
    {"ev char ^s[16][2]", "Invalid array specification"},
    {"ev char[16] ^s[2]", "Invalid array specification"},
    // fields
    {"ev u64 a; u64 ^a", "Invalid field: duplicate field name"},
    {"ev u64 a u32 ^a", "Invalid field: duplicate field name"},
    {"ev char a[4]; char ^a[]", "Invalid field: duplicate field name"},
    {"ev int ^common_pid", "Invalid field: the name of a common field"},
    {"ev u8 ^common_flags", "Invalid field: the name of a common field"},
    {"ev u64 a; ^u32", "Invalid field"},
    {"ev u64 a ^u32", "Invalid field"},
    {"ev u64 a; ^u32 ; u64 c", "Invalid field"},
    {many_fields(65), "Too many fields"},
    // the command's shape: name, type and field before the first ';'
    {"^ev", "Command must be of the form: <name> field[;field] ..."},
    {"^ev u64", "Command must be of the form: <name> field[;field] ..."},
    {"^ev; u64 a", "Command must be of the form: <name> field[;field] ..."},
    {"^ev ; u64 a", "Command must be of the form: <name> field[;field] ..."},
    {"^; u64 a", "Command must be of the form: <name> field[;field] ..."},
    {"^ev u64; u64 b", "Command must be of the form: <name> field[;field] ..."},
    {"^ev\vu64\va", "Command must be of the form: <name> field[;field] ..."},
    // an existing name, whatever the fields (EEXIST, as the kernel)
    {"^lat_ev u64 lat; pid_t pid", "Event already exists", EEXIST},
    {"^free_ev u32 other", "Event already exists", EEXIST},
    // a page at most, as every command file
    {"ev u64 " + std::string(4095 - 7, 'a') + "^aaaa", "command longer than a page (4096 bytes)"},
};

// Refused with an errno and no error_log entry, as the kernel does.
struct SilentCase {
  std::string text;
  int err;
  std::string message;  // CommandFailure::message()
};

const std::vector<SilentCase> kSilent = {
    {"!nosuch", ENOENT, "no synthetic event nosuch"},
    {"!nosuch u64 lat", ENOENT, "no synthetic event nosuch"},
    {"!", ENOENT, "no synthetic event "},
    {"! lat_ev", ENOENT, "no synthetic event "},
    {"!Lat_ev", ENOENT, "no synthetic event Lat_ev"},
    {"!lat_ev", EBUSY, "synthetic event lat_ev is in use"},
    {"!lat_ev u64 lat; pid_t pid", EBUSY, "synthetic event lat_ev is in use"},
    {"  !lat_ev  # comment", EBUSY, "synthetic event lat_ev is in use"},
    {"!enabled_ev", EBUSY, "synthetic event enabled_ev is in use"},
};

// Accepted and doing nothing: the kernel skips empty lines and comments.
const std::vector<std::string> kNoOps = {"", "\n", "   \t ", "# just a comment", "\n\n  # two\n"};

class BadSynthetic : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (!engine_) return;
    // State every refused write must leave alone: a synthetic event in use
    // by an onmatch() action, one unused, one enabled, and counted tables.
    for (const char* def : {"lat_ev u64 lat; pid_t pid", "free_ev u64 x", "enabled_ev s32 v"})
      ASSERT_TRUE(engine_->write_synthetic(def).ok()) << def;
    ASSERT_TRUE(engine_->set_enabled("synthetic", "enabled_ev", true).ok());
    add("sched", "sched_waking", "hist:keys=pid:ts0=common_timestamp.usecs");
    add("sched", "sched_switch",
        "hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).lat_ev($l,next_pid)");
    add("syscalls", "sys_enter_write", "hist:keys=fd:vals=count");
    Record w(40);
    w.pid(1).set<uint64_t>(16, 3).set<uint64_t>(32, 7);
    inject("syscalls", "sys_enter_write", w);
    inject("syscalls", "sys_enter_write", w);
  }
  std::string state() {
    return observable_state(*engine_, {"syscalls:sys_enter_write", "sched:sched_switch", "sched:sched_waking"});
  }
};

TEST_F(BadSynthetic, EveryDefinitionRefusedWithItsTextAndCaretChangingNothing) {
  EXPECT_GE(kLogged.size(), 55u);
  const std::string before = state();
  for (const LoggedCase& c : kLogged) {
    std::string cmd = c.marked;
    const size_t caret = cmd.find('^');
    ASSERT_NE(caret, std::string::npos) << cmd;
    cmd.erase(caret, 1);
    engine_->clear_error_log();

    auto r = engine_->write_synthetic(cmd);
    ASSERT_FALSE(r.ok()) << cmd;
    EXPECT_EQ(r.error().error.err, c.err) << cmd;
    ASSERT_TRUE(r.error().diagnostic.has_value()) << cmd;
    EXPECT_EQ(r.error().message(), c.text) << cmd;
    const std::string log = read_error_log(*engine_);
    ASSERT_NE(log.find("] "), std::string::npos) << cmd;
    const std::string body = log.substr(log.find("] ") + 2);
    EXPECT_EQ(body, "synthetic_events: error: " + c.text + "\n  Command: " + cmd.substr(0, 4096) + "\n" +
                        std::string(11 + caret, ' ') + "^\n")
        << cmd;
    EXPECT_EQ(state(), before) << cmd;
  }
}

TEST_F(BadSynthetic, RemovalsOfMissingOrBusyEventsRefusedWithoutALogEntry) {
  const std::string before = state();
  for (const SilentCase& c : kSilent) {
    engine_->clear_error_log();
    auto r = engine_->write_synthetic(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().error.err, c.err) << c.text;
    EXPECT_FALSE(r.error().diagnostic.has_value()) << c.text;
    EXPECT_EQ(r.error().message(), c.message) << c.text;
    EXPECT_EQ(read_error_log(*engine_), "") << c.text;
    EXPECT_EQ(state(), before) << c.text;
  }
  // O_TRUNC on synthetic_events removes all or, with one busy, none.
  auto t = engine_->truncate_synthetic();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().error.err, EBUSY);
  EXPECT_EQ(state(), before);
}

TEST_F(BadSynthetic, EmptyLinesAndCommentsAreAcceptedAndChangeNothing) {
  const std::string before = state();
  for (const std::string& text : kNoOps) {
    engine_->clear_error_log();
    EXPECT_TRUE(engine_->write_synthetic(text).ok()) << text;
    EXPECT_EQ(read_error_log(*engine_), "") << text;
    EXPECT_EQ(state(), before) << text;
  }
}

// An enabled event is busy (trace_event_dyn_busy): it went away under its
// enable file before; disabling it makes it removable again.
TEST_F(BadSynthetic, EnabledEventIsRemovableOnlyOnceDisabled) {
  ASSERT_FALSE(engine_->write_synthetic("!enabled_ev").ok());
  ASSERT_TRUE(engine_->set_enabled("synthetic", "enabled_ev", false).ok());
  ASSERT_TRUE(engine_->write_synthetic("!enabled_ev").ok());
  EXPECT_EQ(read_synthetic(*engine_), "free_ev\tu64 x\nlat_ev\tu64 lat; pid_t pid\n");
}

// As the kernel, a write of several lines stops at the first bad one; the
// lines before it stay.
TEST_F(BadSynthetic, ABadLineStopsAWriteAfterTheLinesBeforeIt) {
  engine_->clear_error_log();
  auto r = engine_->write_synthetic("ok_ev u64 a\nbad_ev chr b\nnever_ev u64 c");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "Invalid type");
  const std::string log = read_error_log(*engine_);
  EXPECT_EQ(log.substr(log.find("] ") + 2),
            "synthetic_events: error: Invalid type\n  Command: bad_ev chr b\n" + std::string(11 + 7, ' ') + "^\n");
  EXPECT_EQ(read_synthetic(*engine_), "enabled_ev\ts32 v\nfree_ev\tu64 x\nlat_ev\tu64 lat; pid_t pid\nok_ev\tu64 a\n");
}

}  // namespace
}  // namespace histd::testing
