// SPDX-License-Identifier: GPL-2.0-only
// The `enable` files (events/enable, events/<system>/enable and
// events/<system>/<event>/enable) and set_event, as tracefs has them: an
// enabled event's records go to the trace buffer.
#pragma once

#include <string>
#include <string_view>

#include "fs/nodes.h"

namespace histd::fs {

// What an enable file shows: "0", "1", or for a system or all events "X"
// when some are enabled and some not (then a newline).
std::string enable_state(const Namespace& ns, const Node& n);

// Enables or disables what an enable file names; 0 or a negative errno
// (the first refusal; the other events are still set, as the kernel does).
int write_enable(const Namespace& ns, const Node& n, bool on);

// set_event: the enabled events, "system:event" a line.
std::string set_event_text(engine::Engine& engine);
// A write to set_event: each word enables what it names, or with a leading
// '!' disables it, matched as the kernel's ftrace_set_clr_event() matches:
// "system:event", "system:" or "system:*" (all of a system), ":event" or
// "*:event" (that event in any system), a bare word (every event, or every
// system, of that name). 0, or EINVAL when a word names nothing, or the
// first refusal.
int write_set_event(const Namespace& ns, const Node& n, std::string_view data);
// Opening set_event with O_TRUNC: every event disabled. (`n`: the set_event
// file, whose instance is the one meant.)
int clear_set_event(const Namespace& ns, const Node& n);

}  // namespace histd::fs
