// The `enable` files: events/enable, events/<system>/enable and
// events/<system>/<event>/enable, as tracefs has them.
#pragma once

#include <string>

#include "fs/nodes.h"

namespace histd::fs {

// What reading it shows: "0", "1", or for a system or all events "X" when
// some are enabled and some not (then a newline).
std::string enable_state(engine::Engine& engine, const Node& n);

// Enables or disables what it names; 0 or a negative errno. histd records
// synthetic events only, so far: disabling anything succeeds (no other event
// is enabled), enabling another event is EOPNOTSUPP and changes nothing.
int write_enable(engine::Engine& engine, const Node& n, bool on);

}  // namespace histd::fs
