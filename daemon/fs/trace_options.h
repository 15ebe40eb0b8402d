// SPDX-License-Identifier: GPL-2.0-only
// The kernel's trace options (trace_options, options/<name>), in the
// order and with the names its trace_options file lists (6.12, nop tracer),
// those about the function tracer aside.
// An option either means something histd can switch (stacktrace: the
// kernel stack after each recorded event; event-fork: set_event_pid follows
// forks and exits) or is fixed at what histd
// always does, which is the kernel's default: writing that value is taken,
// the other refused (EINVAL), as docs/guide.md's table says why.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "histd/engine.h"

namespace histd::fs {

struct TraceOption {
  std::string_view name;
  bool fixed = false;  // the value of a fixed option
  // Only the top tree's options/ has its file (the kernel's
  // TOP_LEVEL_TRACE_FLAGS); every trace_options lists it.
  bool top_only = false;
  // An instance starts with it off (the kernel's ZEROED_TRACE_FLAGS).
  bool off_in_instances = false;
  // A switchable option's value and switch (null: fixed): 0 or -errno.
  bool (*get)(engine::Engine& engine) = nullptr;
  int (*set)(engine::Engine& engine, bool on) = nullptr;
};

std::span<const TraceOption> trace_options();
const TraceOption* find_trace_option(std::string_view name);
// `instance`: the engine is an instance's (whose fixed values may differ).
bool option_value(engine::Engine& engine, const TraceOption& option, bool instance);
// Sets `option` to `on`: 0, or -EINVAL when a fixed option would change
// (a switch's own errno when it fails).
int set_option(engine::Engine& engine, const TraceOption& option, bool on, bool instance);
// trace_options: one line each, "no" before an option that is off.
std::string trace_options_text(engine::Engine& engine, bool instance);
// A write to trace_options: "[no]<name>" (blanks around it dropped); 0 or
// -EINVAL (no such option here, or a fixed one changed).
int write_trace_options(engine::Engine& engine, std::string_view text, bool instance);

}  // namespace histd::fs
