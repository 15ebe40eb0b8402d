// SPDX-License-Identifier: GPL-2.0-only
// histctl watch: an event's tables read every interval, shown as what
// changed (deltas, rates per second, the percentiles of the interval's
// events), on the terminal or as one JSON object a line.
// The tables come as `show --json`'s document: JSON is the control socket's
// wire format, decoded once here. It is not decoded into readout::EventHist,
// whose keys are bytes: the JSON's are already rendered (symbols, strings).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "histctl/percentiles.h"
#include "histd/quantile.h"

namespace histd::histctl {

struct WatchOptions {
  std::string socket_path;
  std::string event;
  double interval = 1.0;  // seconds
  int count = 0;          // refreshes (lines with json) before stopping; 0: until interrupted
  bool json = false;
  size_t top = 20;  // the terminal's entries and label sets per table and interval
  KeyRules key{.wanted = "", .plain_allowed = false};
  std::vector<quantile::Percentile> percentiles;  // 50,90,99 unless given
};

// event_interval's document with, per table whose key `rules` find, the
// percentiles of the interval's events (its entries' hitcount deltas):
// "percentiles": percentiles_json's {"key", "label_sets"}. Pure.
nlohmann::json interval_report(const nlohmann::json& before, const nlohmann::json& now, double seconds,
                               const KeyRules& rules, std::span<const quantile::Percentile> wanted);

// A report as watch --json's line (without the newline): "time" (Unix
// seconds of the read), "interval" (--interval), "elapsed" (seconds since
// the previous read, which the rates divide by), "event", and the tables
// with only the entries that changed. Pure.
std::string interval_line(nlohmann::json report, double time, double interval, double elapsed);

// A report as the terminal shows it: per table its trigger, the `top`
// entries that changed most (by their first value), each value with its
// delta and rate per second, what else changed and how many did not, the
// totals, and the percentile columns of the `top` label sets with the most
// events. Pure.
std::string interval_text(const nlohmann::json& report, size_t top = 20);

// The loop: reads, prints, sleeps; the exit code (client.h).
int watch(const WatchOptions& options);

}  // namespace histd::histctl
