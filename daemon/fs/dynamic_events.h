// dynamic_events, as far as histd has dynamic events: synthetic events in
// the "s:" form (kprobes, uprobes and eprobes are not there yet).
#pragma once

#include <string>
#include <string_view>

#include "histd/engine.h"

namespace histd::fs {

// "s:synthetic/<name>\t<fields>" per synthetic event, as the kernel lists them.
std::string dynamic_events_text(engine::Engine& engine);

// One write(2): each line created or removed in turn, the first failure
// ends it; 0 or a negative errno. Refusals the kernel logs go to error_log
// under "synthetic_events".
int write_dynamic_events(engine::Engine& engine, std::string_view data);

}  // namespace histd::fs
