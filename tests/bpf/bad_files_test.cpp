// SPDX-License-Identifier: GPL-2.0-only
// The bad-input matrix, the other writable files: events/synthetic/<name>/enable
// (the engine's set_enabled and the FUSE layer's value parser), trace_marker
// (Engine::write_marker) and error_log. Each bad write is refused with a
// clear error, or taken as the kernel takes it, and changes nothing else.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bpf_test_support.h"
#include "fs/control_value.h"

namespace histd::testing {
namespace {

class BadFiles : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (!engine_) return;
    for (const char* def : {"lat_ev u64 lat; pid_t pid", "on_ev u64 x"})
      ASSERT_TRUE(engine_->write_synthetic(def).ok()) << def;
    ASSERT_TRUE(engine_->set_enabled("synthetic", "on_ev", true).ok());
    add("syscalls", "sys_enter_write", "hist:keys=fd:vals=count");
    Record w(40);
    w.pid(1).set<uint64_t>(16, 3).set<uint64_t>(32, 7);
    inject("syscalls", "sys_enter_write", w);
  }
  std::string state() {
    std::string enabled;
    for (const catalog::EventId& id : engine_->reads().enabled_events()) enabled += " " + id.system + ":" + id.name;
    return observable_state(*engine_, {"syscalls:sys_enter_write"}) + "enabled events:" + enabled +
           "\nenabled: lat_ev=" + std::to_string(engine_->reads().enabled("synthetic", "lat_ev")) +
           " on_ev=" + std::to_string(engine_->reads().enabled("synthetic", "on_ev")) + "\n";
  }
};

// ---- enable ---------------------------------------------------------------

struct EnableCase {
  const char* system;
  const char* event;
  bool on;
};

// Enable files of what is not an event, or of ftrace's own (which tracefs
// gives none): ENOENT, nothing logged, nothing changed.
const EnableCase kEnableCases[] = {
    {"ftrace", "print", true},
    {"synthetic", "nosuch", true},
    {"synthetic", "nosuch", false},
    {"synthetic", "", true},
    {"", "", true},
    {"synthetic", "lat_ev ", true},
    {"synthetic", "Lat_ev", true},
    {"Synthetic", "lat_ev", true},
    {"sched", "lat_ev", true},
    {"synthetic/", "lat_ev", true},
    {"sched", "nosuch", true},
};

TEST_F(BadFiles, EnableOfWhatIsNotAnEventIsRefusedChangingNothing) {
  const std::string before = state();
  for (const EnableCase& c : kEnableCases) {
    const std::string what = std::string(c.system) + ":" + c.event;
    engine_->clear_error_log();
    auto r = engine_->set_enabled(c.system, c.event, c.on);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().error.err, ENOENT) << what;
    EXPECT_NE(r.error().message().find(what), std::string::npos) << r.error().message();
    EXPECT_EQ(read_error_log(*engine_), "") << what;
    EXPECT_EQ(state(), before) << what;
  }
}

struct ValueCase {
  std::string text;
  int err;  // 0: accepted
  bool on = false;
};

// What a write(2) to an enable file may hold: kstrtoul_from_user(.., 10),
// then 0 or 1 (event_enable_write()).
const std::vector<ValueCase> kEnableValues = {
    {"", EINVAL},
    {"\n", EINVAL},
    {" 1", EINVAL},
    {"1 ", EINVAL},
    {"\t1", EINVAL},
    {"1\n\n", EINVAL},
    {"-1", EINVAL},
    {"+", EINVAL},
    {"++1", EINVAL},
    {"0x1", EINVAL},
    {"1.0", EINVAL},
    {"one", EINVAL},
    {"true", EINVAL},
    {"2", EINVAL},
    {"10\n", EINVAL},
    {"18446744073709551615", EINVAL},
    {"18446744073709551616", ERANGE},
    {"99999999999999999999\n", ERANGE},
    {std::string("\0"
                 "1",
                 2),
     EINVAL},
    // accepted, as the kernel accepts them
    {"0", 0, false},
    {"1\n", 0, true},
    {"+1", 0, true},
    {"0001", 0, true},
    {std::string("1\0junk", 6), 0, true},
    {"1" + std::string(30, '\n'), EINVAL},  // the 22 bytes read hold more than one newline
};

TEST_F(BadFiles, EnableValuesAreReadAsTheKernelReadsThem) {
  for (const ValueCase& c : kEnableValues) {
    auto v = fs::parse_enable(c.text);
    if (c.err) {
      ASSERT_FALSE(v.ok()) << '"' << c.text << '"';
      EXPECT_EQ(v.error(), c.err) << '"' << c.text << '"';
    } else {
      ASSERT_TRUE(v.ok()) << '"' << c.text << '"';
      EXPECT_EQ(*v, c.on) << '"' << c.text << '"';
    }
  }
  // snapshot and enable share the number reader.
  EXPECT_EQ(*fs::parse_control_number("2\n"), 2u);
  EXPECT_EQ(*fs::parse_control_number(std::string(22, '0') + "5"), 0u);  // only 22 bytes are read
}

// ---- trace_marker -----------------------------------------------------------

// Nothing written to trace_marker is refused or parsed: it is text of an
// ftrace:print event. Whatever it looks like, it reaches that event's
// triggers once and changes no other trigger, table, count or event.
const std::vector<std::string> kMarkerTexts = {
    "",
    "\n",
    "hist:keys=fd",
    "!hist:keys=fd:vals=count",
    "!lat_ev",
    "lat_ev u64 lat",
    "a\nb\nc",
    std::string("nul\0inside", 10),
    "\xff\xfe not utf-8",
    std::string(255, 'x'),
    std::string(256, 'y'),
    std::string(5000, 'z'),
    "%s%s%s%n",
    "\"); } int x; /*",
};

TEST_F(BadFiles, AnyMarkerTextIsOneFtracePrintEventAndNothingElse) {
  add("ftrace", "print", "hist:keys=common_pid");
  const std::string before = state();
  for (size_t i = 0; i < kMarkerTexts.size(); ++i) {
    const std::string& text = kMarkerTexts[i];
    engine_->clear_error_log();
    auto r = engine_->write_marker(text, 4242, "marker");
    ASSERT_TRUE(r.ok()) << i << ": " << r.error().message();
    EXPECT_EQ(read_error_log(*engine_), "") << i;
    EXPECT_EQ(state(), before) << i;
    const std::string h = read_hist(*engine_, "ftrace", "print").value();
    char line[80];
    std::snprintf(line, sizeof(line), "{ common_pid:       4242 } hitcount: %10zu\n", i + 1);
    EXPECT_NE(h.find(line), std::string::npos) << i << "\n" << h;
  }
}

// ---- error_log ----------------------------------------------------------------

// The log keeps the newest 8 entries (tracefs' ring); a burst of bad commands
// on every file pushes out the oldest and nothing else.
TEST_F(BadFiles, ABurstOfBadCommandsKeepsTheNewestEightLogEntries) {
  const std::string before = state();
  engine_->clear_error_log();
  for (int i = 0; i < 20; ++i) {
    const std::string bad = "ev" + std::to_string(i) + " chr a";
    ASSERT_FALSE(engine_->write_synthetic(bad).ok());
    ASSERT_FALSE(engine_->write_trigger("syscalls", "sys_enter_write", "hist:keys=nosuch" + std::to_string(i)).ok());
  }
  const std::string log = read_error_log(*engine_);
  std::vector<std::string> commands;
  for (size_t at = log.find("  Command: "); at != std::string::npos; at = log.find("  Command: ", at + 1))
    commands.push_back(log.substr(at + 11, log.find('\n', at) - at - 11));
  ASSERT_EQ(commands.size(), 8u) << log;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(commands[2 * i], "ev" + std::to_string(16 + i) + " chr a");
    EXPECT_EQ(commands[2 * i + 1], "hist:keys=nosuch" + std::to_string(16 + i));
  }
  EXPECT_EQ(state(), before);
  engine_->clear_error_log();
  EXPECT_EQ(read_error_log(*engine_), "");
}

}  // namespace
}  // namespace histd::testing
