// SPDX-License-Identifier: GPL-2.0-only
// The registry's event filters: the `filter` files of an event and of a
// system, as the kernel's apply_event_filter() and
// apply_subsystem_event_filter() decide them (a bad filter refused).
#include <gtest/gtest.h>

#include "registry_support.h"

namespace histd::testing {
namespace {

using registry::Change;
using registry::EventFilter;
using registry::Registry;
using registry::SystemFilter;

const catalog::EventId kExit{"sched", "sched_process_exit"};

Diagnostic refusal_of(const Registry& r, const registry::Command& command) {
  auto applied = r.apply(command);
  EXPECT_FALSE(applied.ok());
  if (applied.ok() || !applied.error().diagnostic) return Diagnostic{};
  return *applied.error().diagnostic;
}

TEST(RegistryFilter, AnEventsFilterIsKeptAsWrittenWithoutTheTrailingNewline) {
  Registry r(fixtures(), {});
  const auto changes = ok(r, EventFilter{kSwitch, "  prev_prio < 100 && next_comm ~ \"b*\"\n"});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, Change::Kind::EventFiltered);
  EXPECT_EQ(changes[0].event, kSwitch);
  ASSERT_EQ(r.filters().count(kSwitch), 1u);
  EXPECT_EQ(r.filters().at(kSwitch).text, "  prev_prio < 100 && next_comm ~ \"b*\"");
  EXPECT_EQ(r.filters().at(kSwitch).typed.terms.size(), 3u);
  // The same filter again changes nothing; "0" clears it, once.
  EXPECT_TRUE(ok(r, EventFilter{kSwitch, "  prev_prio < 100 && next_comm ~ \"b*\""}).empty());
  EXPECT_EQ(ok(r, EventFilter{kSwitch, " 0\n"}).size(), 1u);
  EXPECT_TRUE(r.filters().empty());
  EXPECT_TRUE(ok(r, EventFilter{kSwitch, "0"}).empty());
}

TEST(RegistryFilter, ABadFilterIsRefusedWithTheKernelsErrorAndChangesNothing) {
  Registry r(fixtures(), {});
  ok(r, EventFilter{kSwitch, "prev_prio < 100"});
  const Registry before = r;
  Diagnostic d = refusal_of(r, EventFilter{kSwitch, "prio < 100"});
  EXPECT_EQ(d.code, ErrorCode::FilterFieldNotFound);
  EXPECT_EQ(d.command, "prio < 100");
  EXPECT_EQ(d.span.begin, 5u);  // one past the name, as the kernel's caret
  d = refusal_of(r, EventFilter{kSwitch, "prev_prio < 100 &&"});
  EXPECT_EQ(d.command, "prev_prio < 100 &&");
  EXPECT_NE(d.code, ErrorCode::FilterFieldNotFound);
  d = refusal_of(r, EventFilter{kSwitch, "prev_comm < 3"});
  EXPECT_EQ(d.code, ErrorCode::FilterExpectString);
  d = refusal_of(r, EventFilter{kSwitch, "prev_comm < \"a\""});
  EXPECT_EQ(d.code, ErrorCode::FilterIllegalFieldOp);
  EXPECT_EQ(r, before);
  EXPECT_EQ(r.filters().at(kSwitch).text, "prev_prio < 100");
}

TEST(RegistryFilter, NoSuchEventIsNotFound) {
  Registry r(fixtures(), {});
  auto applied = r.apply(EventFilter{{"sched", "no_such_event"}, "pid == 1"});
  ASSERT_FALSE(applied.ok());
  EXPECT_FALSE(applied.error().diagnostic);
  EXPECT_EQ(applied.error().error.err, ENOENT);
}

TEST(RegistryFilter, ASystemsFilterGoesToTheEventsWithItsFieldsAndClearsTheOthers) {
  Registry r(fixtures(), {});
  ok(r, EventFilter{kSwitch, "prev_pid == 1"});
  const auto changes = ok(r, SystemFilter{"sched", "prio < 10\n"});
  // sched_waking, sched_wakeup and sched_process_exit have prio;
  // sched_switch's own filter is cleared.
  std::set<catalog::EventId> changed;
  for (const Change& c : changes) {
    EXPECT_EQ(c.kind, Change::Kind::EventFiltered);
    changed.insert(c.event);
  }
  EXPECT_EQ(changed, (std::set<catalog::EventId>{kSwitch, kWaking, kWakeup, kExit}));
  EXPECT_EQ(r.filters().count(kSwitch), 0u);
  EXPECT_EQ(r.filters().at(kWaking).text, "prio < 10");
  EXPECT_EQ(r.filters().at(kExit).text, "prio < 10");
  EXPECT_EQ(r.filters().count(kKmalloc), 0u);
  // "0" clears the system's.
  EXPECT_EQ(ok(r, SystemFilter{"sched", "0"}).size(), 3u);
  EXPECT_TRUE(r.filters().empty());
}

TEST(RegistryFilter, ASystemsFilterNoEventTakesIsRefused) {
  Registry r(fixtures(), {});
  ok(r, EventFilter{kSwitch, "prev_pid == 1"});
  const Registry before = r;
  Diagnostic d = refusal_of(r, SystemFilter{"sched", "bytes_req > 10"});
  EXPECT_EQ(d.code, ErrorCode::FilterBadSubsystem);
  EXPECT_EQ(d.message(), "Couldn't find or set field in one of a subsystem's events");
  // A syntax error is the parser's, where it is.
  d = refusal_of(r, SystemFilter{"sched", "prio <"});
  EXPECT_NE(d.code, ErrorCode::FilterBadSubsystem);
  EXPECT_EQ(r, before);
  auto none = r.apply(SystemFilter{"no_such_system", "pid == 1"});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().error.err, ENODEV);
}

TEST(RegistryFilter, SyntheticEventsTakeNoFilterYet) {
  Registry r(fixtures(), {});
  ok(r, synth_line("wakeup_latency u64 lat; pid_t pid"));
  Diagnostic d = refusal_of(r, EventFilter{{"synthetic", "wakeup_latency"}, "pid == 1"});
  EXPECT_EQ(d.code, ErrorCode::Unsupported);
}

}  // namespace
}  // namespace histd::testing
