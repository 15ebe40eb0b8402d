// SPDX-License-Identifier: GPL-2.0-only
// Shared by the registry's tests: fixture events, and commands applied the
// way the engine applies them (parsed once into the registry's command).
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "fixtures.h"
#include "histd/registry.h"

namespace histd::testing {

inline const catalog::EventId kKmalloc{"kmem", "kmalloc"};
inline const catalog::EventId kWaking{"sched", "sched_waking"};
inline const catalog::EventId kSwitch{"sched", "sched_switch"};
inline const catalog::EventId kWakeup{"sched", "sched_wakeup"};

// A write to `event`'s trigger file (a line histd printed may be long).
inline registry::Command write(const catalog::EventId& event, std::string_view text) {
  auto w = registry::TriggerWrite::parse(event, text, registry::kMaxPrintedCommandBytes, {});
  EXPECT_TRUE(w.ok()) << text;
  return w.ok() ? registry::Command(std::move(*w)) : registry::Command(registry::SynthTruncate{});
}

inline registry::Command synth_line(std::string_view text) {
  auto w = registry::SynthWrite::parse(text, false);
  EXPECT_TRUE(w.ok()) << text;
  return w.ok() ? registry::Command(std::move(*w)) : registry::Command(registry::SynthTruncate{});
}

// Applies `command` and keeps the next registry; fails the test on a refusal.
inline std::vector<registry::Change> ok(registry::Registry& r, const registry::Command& command) {
  auto applied = r.apply(command);
  EXPECT_TRUE(applied.ok()) << (applied.ok()                 ? ""
                                : applied.error().diagnostic ? applied.error().diagnostic->message()
                                                             : applied.error().error.context);
  if (!applied) return {};
  r = std::move(applied->next);
  return std::move(applied->changes);
}

}  // namespace histd::testing
