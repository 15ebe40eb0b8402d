// SPDX-License-Identifier: GPL-2.0-only
// The line-per-item files: trigger, `histctl list`, error_log,
// synthetic_events.
#include <fmt/format.h>

#include "histd/render.h"

namespace histd::render {

std::string trigger_line(const readout::TriggerInfo& t) {
  if (!t.hist) return t.line;
  switch (t.state) {
    case readout::TriggerState::Active:
      return t.line + " [active]";
    case readout::TriggerState::Paused:
      return t.line + " [paused]";
    case readout::TriggerState::NotRestored:
      break;
  }
  return t.line;
}

std::string trigger_file(const std::vector<readout::TriggerInfo>& triggers) {
  if (triggers.empty())
    return "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist "
           "disable_hist hist\n";
  std::string out;
  for (const readout::TriggerInfo& t : triggers) out += trigger_line(t) + "\n";
  return out;
}

std::string trigger_list(const std::vector<readout::TriggerInfo>& triggers) {
  std::string out;
  for (const readout::TriggerInfo& t : triggers) {
    // A saved trigger whose event names no "system:event" is listed as saved.
    if (t.event.empty())
      out += fmt::format("{} {}", t.system, trigger_line(t));
    else
      out += fmt::format("{}:{} {}", t.system, t.event, trigger_line(t));
    if (t.state == readout::TriggerState::NotRestored) out += fmt::format(" [not restored: {}]", t.not_restored);
    out += '\n';
  }
  return out;
}

std::string error_log(const std::vector<readout::ErrorLogEntry>& entries) {
  std::string out;
  for (const readout::ErrorLogEntry& e : entries) {
    if (!e.diagnostic) {
      out += e.note;
      continue;
    }
    out += fmt::format("[{:5}.{:06}] ", e.seconds, e.microseconds);
    out += format_error_log_entry(e.location, *e.diagnostic);
  }
  return out;
}

std::string synthetic_events(const std::vector<synth::SynthDefinition>& defs) {
  std::string out;
  for (const synth::SynthDefinition& d : defs) out += synth::list_line(d) + "\n";
  return out;
}

}  // namespace histd::render
