// SPDX-License-Identifier: GPL-2.0-only
#include "fs/trace_options.h"

#include <cerrno>

namespace histd::fs {

namespace {

bool stacktrace(engine::Engine& e) { return e.trace_ring().stacktrace_option(); }
int set_stacktrace(engine::Engine& e, bool on) {
  e.trace_ring().set_stacktrace_option(on);
  return 0;
}
// set_event_pid's list follows forks and exits.
bool event_fork(engine::Engine& e) { return e.event_fork(); }
int set_event_fork(engine::Engine& e, bool on) {
  auto r = e.set_event_fork(on);
  return r ? 0 : -r.error().error.err;
}

// What histd always does, as each fixed value says: lines printed by their
// events' print fmt with symbols, the flags column and the task's comm,
// trace_marker taken, the buffer overwriting its oldest lines when full.
// Left out while histd cannot honour them, as the clients that find them
// would set them: function-fork (histd traces no functions; trace-cmd
// record -c follows children with event-fork, or itself without it) and
// pause-on-trace (the kernel's selftests set it first).
constexpr TraceOption kOptions[] = {
    {"print-parent", true},
    {"sym-offset", false},
    {"sym-addr", false},
    {"verbose", false},
    {"raw", false},
    {"hex", false},
    {"bin", false},
    {"block", false},
    {"fields", false},
    {"trace_printk", true, true},
    {"annotate", true},
    {"userstacktrace", false},
    {"sym-userobj", false},
    {"printk-msg-only", false, true},
    {"context-info", true},
    {"latency-format", false},
    {"record-cmd", true, true},
    {"record-tgid", false},
    {"overwrite", true},
    {"disable_on_free", false},
    {"irq-info", true},
    {"markers", true},
    {"event-fork", false, false, false, event_fork, set_event_fork},
    {"trace_printk_dest", true, false, true},
    {"copy_trace_marker", true, false, true},
    {"hash-ptr", true},
    {"function-trace", true},
    {"stacktrace", false, false, false, stacktrace, set_stacktrace},
};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::span<const TraceOption> trace_options() { return kOptions; }

const TraceOption* find_trace_option(std::string_view name) {
  for (const TraceOption& o : kOptions)
    if (o.name == name) return &o;
  return nullptr;
}

bool option_value(engine::Engine& engine, const TraceOption& option, bool instance) {
  if (option.get) return option.get(engine);
  return option.fixed && !(instance && option.off_in_instances);
}

int set_option(engine::Engine& engine, const TraceOption& option, bool on, bool instance) {
  if (!option.set) return on == option_value(engine, option, instance) ? 0 : -EINVAL;
  return option.set(engine, on);
}

std::string trace_options_text(engine::Engine& engine, bool instance) {
  std::string out;
  for (const TraceOption& o : kOptions) {
    if (!option_value(engine, o, instance)) out += "no";
    out += o.name;
    out += '\n';
  }
  return out;
}

int write_trace_options(engine::Engine& engine, std::string_view text, bool instance) {
  std::string_view name = trimmed(text);
  bool on = true;
  // As trace_set_options(): "no" before the name turns it off.
  if (name.starts_with("no") && !find_trace_option(name)) {
    name.remove_prefix(2);
    on = false;
  }
  const TraceOption* option = find_trace_option(name);
  if (!option) return -EINVAL;
  return set_option(engine, *option, on, instance);
}

}  // namespace histd::fs
