// SPDX-License-Identifier: GPL-2.0-only
// SyntheticEvents (synthetic_events.h): the synthetic events' control and
// trace slots, and the programs of the events that generate them.
#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"
#include "deploy/synthetic_events.h"
#include "hist_shared.h"

namespace histd::deploy {

SyntheticEvents::SyntheticEvents(State state)
    : catalog_(state.catalog),
      events_(state.events),
      synths_(state.synths),
      objects_(state.objects),
      programs_(state.programs) {}

bool SyntheticEvents::reaches(const std::string& from, const std::string& to) const {
  // Of the programs as deployed (registry::Registry::synth_reaches decides
  // on the registry's state): which events a rebuild must reach.
  std::set<std::string> seen;
  std::function<bool(const std::string&)> walk = [&](const std::string& s) {
    if (!seen.insert(s).second) return false;
    auto it = events_.find(catalog::EventId{kSynthSystem, s});
    if (it == events_.end()) return false;
    for (const auto& t : it->second->triggers)
      for (const plan::ActionPlan& a : t->plan.actions)
        if (!a.synth.empty() && (a.synth == to || walk(a.synth))) return true;
    return false;
  };
  return walk(from);
}

Status SyntheticEvents::refresh(const std::string& name) {
  auto s = synths_.find(name);
  if (s == synths_.end()) return ok_status();
  auto ev = events_.find(catalog::EventId{kSynthSystem, name});
  const bool has_triggers = ev != events_.end() && (!ev->second->triggers.empty() || !ev->second->controls.empty());
  auto st = objects_.set_paused(s->second->trace_slot, !s->second->enabled);
  if (!st) return st;
  // A recorded eprobe on it wants its records too.
  const auto eprobes = programs_.synth_eprobes();
  const bool has_eprobes = std::any_of(eprobes.begin(), eprobes.end(), [&](const auto& e) { return e.first == name; });
  return objects_.set_paused(s->second->slot, !(s->second->enabled || has_triggers || has_eprobes));
}

Status SyntheticEvents::rebuild_generators(const std::string& name) {
  for (auto& [id, ev] : events_) {
    bool generates = false;
    for (const auto& t : ev->triggers)
      for (const plan::ActionPlan& a : t->plan.actions)
        generates = generates || (!a.synth.empty() && (a.synth == name || reaches(a.synth, name)));
    if (!generates) continue;
    auto st = programs_.rebuild(*ev, triggers_of(*ev), controls_of(*ev));
    if (!st) return st;
  }
  return ok_status();
}

void SyntheticEvents::after_removal(EventState& ev) {
  if (catalog_.source(ev.system, ev.event) != catalog::EventSource::Synthetic) return;
  (void)refresh(ev.event);
  // A smaller program than the one it replaces: failing here is not expected.
  (void)rebuild_generators(ev.event);
}

CommandResult SyntheticEvents::define(const registry::Synthetic& def) {
  auto slot = objects_.allocate_slot();
  if (!slot) return system_failure(std::move(slot).error());
  auto trace_slot = objects_.allocate_slot();
  if (!trace_slot) {
    objects_.release_slot(*slot);
    return system_failure(std::move(trace_slot).error());
  }
  auto s = std::make_unique<SynthState>();
  s->def = def.def;
  s->id = def.id;
  s->slot = *slot;
  s->trace_slot = *trace_slot;
  auto st = objects_.set_paused(s->slot, true);
  if (st) st = objects_.set_paused(s->trace_slot, true);
  if (!st) {
    objects_.release_slot(s->slot);
    objects_.release_slot(s->trace_slot);
    return system_failure(std::move(st).error());
  }
  catalog_.add_dynamic(synth::format_of(s->def, s->id));
  synths_[def.def.name] = std::move(s);
  return Unit{};
}

void SyntheticEvents::remove(const std::string& name) {
  auto it = synths_.find(name);
  if (it == synths_.end()) return;
  catalog_.remove_dynamic(kSynthSystem, name);
  objects_.release_slot(it->second->slot);
  objects_.release_slot(it->second->trace_slot);
  events_.erase(catalog::EventId{kSynthSystem, name});
  synths_.erase(it);
}

CommandResult SyntheticEvents::enable(const std::string& event, bool on) {
  auto s = synths_.find(event);
  if (s == synths_.end()) return Unit{};
  const bool was = s->second->enabled;
  s->second->enabled = on;
  auto st = refresh(event);
  if (!st) {
    s->second->enabled = was;
    return system_failure(std::move(st).error());
  }
  return Unit{};
}

Status SyntheticEvents::refresh_eprobe_generators(const EventState& ev) {
  const std::optional<catalog::EventId> on = programs_.eprobe_attached(ev);
  if (!on || on->system != catalog::kSynthSystem) return ok_status();
  auto st = refresh(on->name);
  if (!st) return st;
  return rebuild_generators(on->name);
}

const synth::SynthDefinition* SyntheticEvents::traced(uint32_t id) const {
  auto found = std::find_if(synths_.begin(), synths_.end(), [&](const auto& e) { return e.second->id == id; });
  if (found == synths_.end() || !found->second->enabled) return nullptr;
  return &found->second->def;
}

}  // namespace histd::deploy
