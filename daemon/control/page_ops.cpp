// SPDX-License-Identifier: GPL-2.0-only
// What the page at `/` (histd-exporter, render::page) is made from: the
// tables, the page's options as the metrics request names them, and the
// folded stacks its links ask for.
#include <set>
#include <utility>

#include "control/ops.h"
#include "control/protocol.h"

namespace histd::control {

namespace {

std::vector<readout::EventHist> events_where(engine::Engine& engine, bool (*wanted)(const engine::TriggerInfo&)) {
  std::vector<readout::EventHist> events;
  std::set<std::pair<std::string, std::string>> seen;
  for (const engine::TriggerInfo& t : engine.reads().trigger_lines()) {
    if (!t.hist || t.state == readout::TriggerState::NotRestored || !wanted(t)) continue;
    if (!seen.emplace(t.system, t.event).second) continue;
    if (auto h = engine.reads().hist(t.system, t.event)) events.push_back(std::move(*h));
  }
  return events;
}

}  // namespace

std::vector<readout::EventHist> hist_events(engine::Engine& engine) {
  return events_where(engine, [](const engine::TriggerInfo&) { return true; });
}

// A bucketed key prints as FIELD.log2 or FIELD.buckets=N in its trigger
// line: events without one are not read (a 100k-entry table of pids is not
// read every interval for nothing). An event that has one is read whole;
// the sampler keeps only its histogram tables.
std::vector<readout::EventHist> histogram_events(engine::Engine& engine) {
  return events_where(engine, [](const engine::TriggerInfo& t) {
    return t.line.find(".log2") != std::string::npos || t.line.find(".buckets=") != std::string::npos;
  });
}

// The exporter names the page's form in the command, as it names the
// metrics' format: the metrics socket takes no other member from it.
std::optional<render::PageOptions> page_options(std::string_view command) {
  render::PageOptions o;
  if (command == "html") return o;
  if (command == "html-log") {
    o.scale = render::PageScale::Log;
    return o;
  }
  return std::nullopt;
}

std::optional<Expected<std::string>> folded_stacks(engine::Engine& engine, std::string_view command) {
  if (!command.starts_with(kFoldedPrefix)) return std::nullopt;
  const std::string id(command.substr(kFoldedPrefix.size()));
  if (auto text = render::folded_table(hist_events(engine), id, engine.resolver())) return std::move(*text);
  return fail(ErrorKind::NotFound, ENOENT, std::string(kNoStackTable) + " '" + id + "'");
}

}  // namespace histd::control
