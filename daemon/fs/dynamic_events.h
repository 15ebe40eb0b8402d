// SPDX-License-Identifier: GPL-2.0-only
// dynamic_events: histd's synthetic events in the "s:" form, and the
// kernel's probe events ("p:", "r:"; kprobes where the kernel has them,
// uprobes), whose lines go to the kernel's own dynamic_events (root only: a
// probe reads any memory). Eprobes are not there yet.
#pragma once

#include <string>
#include <string_view>

#include "histd/engine.h"

namespace histd::fs {

// "s:synthetic/<name>\t<fields>" per synthetic event, as the kernel lists
// them, then the kernel's probe events.
std::string dynamic_events_text(engine::Engine& engine);

// One write(2): each line created or removed in turn, the first failure
// ends it; 0 or a negative errno. Refusals the kernel logs go to error_log
// under "synthetic_events" (histd's) or "dynamic_events" (the kernel's).
// `root`: the writer may define probe events.
int write_dynamic_events(engine::Engine& engine, std::string_view data, bool root);
// O_TRUNC: every synthetic event, and (`root`) every probe event of the
// kernel's, goes.
int truncate_dynamic_events(engine::Engine& engine, bool root);

}  // namespace histd::fs
