// SPDX-License-Identifier: GPL-2.0-only
// histctl watch: what changed in an event's tables between two reads of
// hist.json's document. Pure.
#pragma once

#include <nlohmann/json.hpp>

namespace histd::histctl {

// Per table of `now` (matched to `before`'s by its trigger, without the
// [active]/[paused] after it):
//   {"trigger", "reset": bool, "totals": {now's},
//    "deltas": {"hits", "dropped", "missed"}, "rates": {the same per second},
//    "entries": [{"keys", "values": {now's}, "deltas": {...}, "rates": {...}}]}
// A delta is what a count grew by; a key or a table that appeared counts
// from 0. A table whose counts went down, or that lost an entry, was
// cleared (or made anew): it is a reset, and its deltas are its counts
// since then, its counts now, never negative. `before` null: nothing read
// before, every count from 0. `seconds` between the reads: 0 (unknown)
// leaves "rates" out. Rates are rounded to 3 decimals.
nlohmann::json event_interval(const nlohmann::json& before, const nlohmann::json& now, double seconds);

// Whether an entry of event_interval changed: some delta is not 0.
bool changed(const nlohmann::json& entry);

}  // namespace histd::histctl
