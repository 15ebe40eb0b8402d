// SPDX-License-Identifier: GPL-2.0-only
// Eprobes: histd's own eprobes run a tracepoint program at the event they
// are attached to (the kernel's probe files are ProbeFiles').
#include "deploy/event_programs.h"

namespace histd::deploy {

std::optional<catalog::EventId> EventPrograms::eprobe_attached(const EventState& ev) const {
  if (catalog_.source(ev.system, ev.event) != catalog::EventSource::Probe) return std::nullopt;
  auto format = catalog_.event(ev.system, ev.event);
  if (!format || !(*format)->probe || !(*format)->probe->eprobe) return std::nullopt;
  const catalog::ProbeDefinition& d = *(*format)->probe;
  return catalog::EventId{d.attached_system, d.attached_event};
}

std::vector<std::pair<std::string, const EventState*>> EventPrograms::synth_eprobes() const {
  std::vector<std::pair<std::string, const EventState*>> out;
  for (const auto& [id, ev] : events_) {
    if (!ev->recorded() || !ev->record_slot) continue;
    std::optional<catalog::EventId> on = eprobe_attached(*ev);
    if (on && on->system == catalog::kSynthSystem) out.emplace_back(std::move(on->name), ev.get());
  }
  return out;
}

std::optional<codegen::EprobeOutput> EventPrograms::eprobe_output(const EventState& ev,
                                                                  const std::string& synth) const {
  auto attached = catalog_.event(catalog::kSynthSystem, synth);
  auto format = catalog_.event(ev.system, ev.event);
  if (!attached || !format) return std::nullopt;
  auto entry = pipeline::probe_entry(**format, attached->get());
  if (!entry) return std::nullopt;  // checked when it was defined
  return codegen::EprobeOutput{std::move(*entry), (*format)->id, *ev.record_slot};
}

}  // namespace histd::deploy
