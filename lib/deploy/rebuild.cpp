// SPDX-License-Identifier: GPL-2.0-only
// build(): one of an event's programs from the deployer's state (rebuild()
// and the chain are in chain.cpp). What the program is made of is read from
// the state as pipeline::EventParts, and pipeline::compile_event() writes it
// — the same function `histctl explain` and the tests call.
// Also the control triggers: they live on one event and, from BPF, flip the
// pause flags of another event's hist triggers (enable_hist/disable_hist) or
// its recording (enable_event/disable_event), or tracing_on, or ask histd
// for a snapshot or send the stack; and the recording of enabled events.
#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "deploy/kernel_objects.h"
#include "hist_shared.h"

namespace histd::deploy {

std::vector<DeployedControl*> Deployer::controls_of(EventState& ev) {
  std::vector<DeployedControl*> out;
  for (auto& e : ev.controls) out.push_back(e.get());
  return out;
}

std::vector<Trigger*> Deployer::triggers_of(EventState& ev) {
  std::vector<Trigger*> out;
  for (auto& t : ev.triggers) out.push_back(t.get());
  return out;
}

void Deployer::refresh_enablers_of(const EventState& target) {
  for (auto& [id, ev] : events_) {
    const bool targets = std::any_of(ev->controls.begin(), ev->controls.end(), [&](const auto& e) {
      return e->cmd.targets_hist() && e->cmd.system == target.system && e->cmd.event == target.event;
    });
    if (!targets) continue;
    auto st = rebuild(*ev, triggers_of(*ev), controls_of(*ev));
    if (!st) {
      log_({}, nullptr,
           fmt::format("histd: could not update {}:{} after {}:{} changed: {}\n", id.system, id.name, target.system,
                       target.event, st.error().context));
    }
  }
}

CommandResult Deployer::deploy_control(EventState& ev, const registry::ControlTrigger& decided) {
  auto slot = objects_->allocate_slot();
  if (!slot) return unexpected(CommandFailure{std::nullopt, std::move(slot).error()});
  auto e = std::make_unique<DeployedControl>();
  e->cmd = decided.cmd;
  e->filter = decided.filter;
  e->slot = *slot;
  histd_trigger_control c{0, e->cmd.count
                                 ? static_cast<uint32_t>(std::min<uint64_t>(*e->cmd.count, HISTD_UNLIMITED - 1))
                                 : HISTD_UNLIMITED};
  bpf_map_update_elem(objects_->control_fd(), &e->slot, &c, BPF_ANY);
  // enable_event/disable_event: the target records under a slot they flip.
  if (auto held = hold_target(*e); !held) {
    objects_->release_slot(e->slot);
    return system_failure(std::move(held).error());
  }
  std::vector<DeployedControl*> all{e.get()};
  for (auto& other : ev.controls) all.push_back(other.get());
  auto st = rebuild(ev, triggers_of(ev), all);
  if (!st) {
    release_control(*e);
    return rebuild_failure(ev, e->cmd.command, std::move(st).error());
  }
  // A snapshot trigger allocates the snapshot buffer (tracing_arm_snapshot()).
  if (e->cmd.kind == parse::ControlCommand::Kind::Snapshot) ring_->allocate_snapshot();
  ev.controls.insert(ev.controls.begin(), std::move(e));
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) {
    // The events generating this one run its controls in their programs.
    auto generators = rebuild_generators(ev.event);
    if (!generators) {
      std::unique_ptr<DeployedControl> added = std::move(ev.controls.front());
      ev.controls.erase(ev.controls.begin());
      (void)rebuild(ev, triggers_of(ev), controls_of(ev));
      (void)rebuild_generators(ev.event);
      release_control(*added);
      return rebuild_failure(ev, added->cmd.command, std::move(generators).error());
    }
    (void)refresh_synth(ev.event);
  }
  return Unit{};
}

CommandResult Deployer::remove_control(EventState& ev, DeployedControl* going) {
  std::vector<DeployedControl*> rest;
  for (auto& e : ev.controls)
    if (e.get() != going) rest.push_back(e.get());
  auto st = rebuild(ev, triggers_of(ev), rest);
  if (!st) return unexpected(CommandFailure{std::nullopt, std::move(st).error()});
  // Out of the event before its release, which may rebuild the event itself
  // (an enable_event of its own event).
  auto it = std::find_if(ev.controls.begin(), ev.controls.end(), [&](const auto& e) { return e.get() == going; });
  std::unique_ptr<DeployedControl> gone = std::move(*it);
  ev.controls.erase(it);
  release_control(*gone);
  after_synth_removal(ev);
  return Unit{};
}

Status Deployer::hold_target(const DeployedControl& e) {
  if (!e.cmd.has_target() || e.cmd.targets_hist()) return ok_status();
  EventState& target = event_state(catalog::EventId{e.cmd.system, e.cmd.event});
  ++target.soft_refs;
  if (target.soft_refs > 1 || target.enabled) return ok_status();
  auto st = start_recording(target);
  if (!st) --target.soft_refs;
  return st;
}

void Deployer::release_control(DeployedControl& e) {
  objects_->release_slot(e.slot);
  if (!e.cmd.has_target() || e.cmd.targets_hist()) return;
  auto it = events_.find(catalog::EventId{e.cmd.system, e.cmd.event});
  if (it == events_.end() || it->second->soft_refs == 0) return;
  EventState& target = *it->second;
  --target.soft_refs;
  if (!target.recorded()) {
    stop_recording(target);
  } else if (target.soft_refs == 0 && target.record_slot) {
    // Out of soft mode: the event records as its enable file says.
    (void)objects_->set_paused(*target.record_slot, !target.enabled);
  }
}

CommandResult Deployer::record_event(EventState& ev, bool on) {
  if (ev.enabled == on) return Unit{};
  const bool was = ev.recorded();
  ev.enabled = on;
  Status st = ok_status();
  if (!was && ev.recorded()) {
    st = start_recording(ev);
  } else if (was && !ev.recorded()) {
    stop_recording(ev);
  } else if (ev.record_slot) {
    // Soft mode (an enable_event/disable_event targets it): the enable file
    // turns its recording on or off as the triggers do.
    st = objects_->set_paused(*ev.record_slot, !on);
  }
  if (!st) {
    ev.enabled = !on;
    return system_failure(std::move(st).error());
  }
  return Unit{};
}

Status Deployer::start_recording(EventState& ev) {
  // Its records are printed with its format's print fmt.
  if (auto learned = ring_->learn_format(catalog_, ev.system, ev.event); !learned) return learned;
  auto slot = objects_->allocate_slot();
  if (!slot) return unexpected(std::move(slot).error());
  ev.record_slot = *slot;
  auto st = objects_->set_paused(*slot, !ev.enabled);
  if (st) st = rebuild(ev, triggers_of(ev), controls_of(ev));
  if (st) st = refresh_eprobe_generators(ev);
  if (!st) {
    objects_->release_slot(*slot);
    ev.record_slot.reset();
    (void)refresh_eprobe_generators(ev);
  }
  return st;
}

void Deployer::stop_recording(EventState& ev) {
  if (!ev.record_slot) return;
  const uint32_t slot = *ev.record_slot;
  // Paused first: until the smaller program is in, nothing more is sent.
  (void)objects_->set_paused(slot, true);
  ev.record_slot.reset();
  if (!shutting_down_) {
    (void)rebuild(ev, triggers_of(ev), controls_of(ev));
    (void)refresh_eprobe_generators(ev);
  }
  objects_->release_slot(slot);
}

EventEnableState Deployer::enable_state(const catalog::EventId& event) const {
  const EventState* ev = find_event(event);
  if (!ev || !ev->record_slot) return {};
  return EventEnableState{!objects_->is_paused(*ev->record_slot), ev->soft_refs > 0};
}

std::optional<catalog::SyscallEvent> Deployer::raw_syscall(const EventState& ev) const {
  auto format = catalog_.event(ev.system, ev.event);
  if (!format) return std::nullopt;
  return pipeline::syscall_entry(**format, options_.raw_syscalls);
}

pipeline::EventParts Deployer::event_parts(const EventState& ev, const std::vector<Trigger*>& triggers,
                                           const std::vector<DeployedControl*>& enables, bool attaches) const {
  auto enable_input = [&](const DeployedControl& e) {
    codegen::ControlInput in;
    in.kind = e.cmd.kind;
    in.filter = e.filter ? &*e.filter : nullptr;
    in.control_slot = e.slot;
    auto target = e.cmd.has_target() ? events_.find(catalog::EventId{e.cmd.system, e.cmd.event}) : events_.end();
    if (target == events_.end()) return in;
    if (e.cmd.targets_hist()) {
      for (const auto& t : target->second->triggers) in.target_slots.push_back(t->slot);
    } else if (target->second->record_slot) {
      in.target_slots.push_back(*target->second->record_slot);
    }
    return in;
  };
  pipeline::EventParts parts;
  for (const Trigger* t : triggers) parts.own.hist.push_back({&t->plan, t->slot});
  for (const DeployedControl* e : enables) parts.own.controls.push_back(enable_input(*e));
  // Every synthetic event: its definition where it has one, its triggers
  // where it has any (its EventState).
  for (const auto& [name, s] : synths_) {
    pipeline::SynthSink& sink = parts.synths[name];
    sink.def = &s->def;
    sink.id = s->id;
    sink.control_slot = s->slot;
    sink.trace_slot = s->trace_slot;
  }
  for (const auto& [id, s] : events_) {
    if (id.system != kSynthSystem) continue;
    pipeline::EventTriggers& sink = parts.synths[id.name].triggers;
    for (const auto& t : s->triggers) sink.hist.push_back({&t->plan, t->slot});
    for (const auto& e : s->controls) sink.controls.push_back(enable_input(*e));
  }
  // Recorded eprobes on synthetic events: built where those are generated.
  for (const auto& [name, on] : synth_eprobes())
    if (synths_.count(name))
      if (auto out = eprobe_output(*on, name)) parts.synths[name].eprobes.push_back(std::move(*out));
  // Once attached, the program keeps the entry it was attached through.
  parts.syscall = ev.attachment ? ev.syscall : attaches ? raw_syscall(ev) : std::nullopt;
  if (ev.recorded() && ev.record_slot)
    if (auto format = catalog_.event(ev.system, ev.event)) {
      parts.record = pipeline::record_input(**format);
      parts.record->slot = *ev.record_slot;
    }
  return parts;
}

Expected<std::map<std::string, int>> Deployer::unit_maps(const pipeline::EventUnit& unit,
                                                         const std::vector<Trigger*>& triggers) const {
  std::map<const plan::HistPlan*, const Trigger*> by_plan;
  for (const Trigger* t : triggers) by_plan[&t->plan] = t;
  for (const auto& [id, s] : events_)
    if (id.system == kSynthSystem)
      for (const auto& t : s->triggers) by_plan[&t->plan] = t.get();
  std::map<std::string, int> maps{{codegen::kControlMap, objects_->control_fd()}};
  maps[codegen::kRingMap] = ring_->ring_fd();
  maps[codegen::kLostMap] = ring_->lost_fd();
  const std::vector<const plan::HistPlan*> numbered = unit.numbered();
  for (size_t i = 0; i < numbered.size(); ++i) {
    const Trigger& t = *by_plan.at(numbered[i]);
    maps[codegen::table_map_name(i)] = t.table->map.get();
    maps[codegen::stats_map_name(i)] = t.table->stats.get();
    if (t.table->hot) maps[codegen::hot_map_name(i)] = t.table->hot.get();
    if (t.vars) maps[codegen::var_map_name(i)] = t.vars.get();
    for (size_t k = 0; k < t.plan.refs.size(); ++k) {
      const plan::VarRef& r = t.plan.refs[k];
      if (r.self) continue;
      const Trigger* owner = find_trigger(r.owner).second;
      if (!owner || owner->record_map() < 0)
        return fail(ErrorKind::Invalid, ENOENT, fmt::format("the owner of ${} is gone", r.name));
      maps[codegen::ref_map_name(i, k)] = owner->record_map();
    }
  }
  return maps;
}

// Compiles one program holding `triggers`: every check but the kernel's
// own (the verifier's, at load).
Expected<Deployer::Built> Deployer::build(EventState& ev, const std::vector<Trigger*>& triggers,
                                          const std::vector<DeployedControl*>& enables, bool group) {
  // Synthetic events and ftrace:print (trace_marker) are not tracepoints:
  // histd runs their programs through the test entry as their records come.
  const catalog::EventSource kind = catalog_.source(ev.system, ev.event);
  // So are eprobes on synthetic events: they are built where those are generated.
  const std::optional<catalog::EventId> on = eprobe_attached(ev);
  const bool injected_only = pipeline::injected_only(kind) || (on && on->system == kSynthSystem);
  Built b;
  b.attaches = options_.attach && !injected_only;
  b.parts = event_parts(ev, triggers, enables, b.attaches);
  if (group) b.parts.record.reset();  // the event program records it
  // kprobe events run only kprobe-type programs, which see the registers:
  // the program computes the record from them as its definition says.
  if (catalog::source_traits(kind).record_from_registers) {
    auto format = catalog_.event(ev.system, ev.event);
    if (!format) return unexpected(std::move(format).error());
    std::shared_ptr<const catalog::EventFormat> attached;
    if (on) {
      auto a = catalog_.event(on->system, on->name);
      if (!a) return unexpected(std::move(a).error());
      attached = *a;
    }
    auto probe = pipeline::probe_entry(**format, attached.get());
    if (!probe) return unexpected(std::move(probe).error());
    if (auto f = eprobe_filters_.find(catalog::EventId{ev.system, ev.event}); f != eprobe_filters_.end())
      probe->filter = &f->second;
    b.parts.probe = std::move(*probe);
  }
  auto unit = pipeline::event_unit(b.parts);
  if (!unit) return unexpected(std::move(unit).error());
  b.chained = b.attaches && chained(ev);
  unit->entry.chained = b.chained;
  unit->entry.test_entry = !b.attaches || options_.test_entries;
  auto maps = unit_maps(*unit, triggers);
  if (!maps) return unexpected(std::move(maps).error());
  b.maps = std::move(*maps);
  b.unit = pipeline::compile_event(*unit);
  auto object = compiler_.compile(b.unit.source);
  if (!object) return unexpected(std::move(object).error());
  b.object = std::move(*object);
  // The kernel would refuse it with a bare E2BIG, after loading began.
  auto maps_used = runtime::maps_used_per_program(b.object);
  if (!maps_used) return unexpected(std::move(maps_used).error());
  if (*maps_used > kMaxMapsPerProgram)
    return fail(
        ErrorKind::Busy, ENOSPC,
        fmt::format("{} triggers on {}:{} would use {} maps (at most {} per program)",
                    unit->numbered().size() + enables.size(), ev.system, ev.event, *maps_used, kMaxMapsPerProgram));
  b.maps_used = *maps_used;
  return b;
}

}  // namespace histd::deploy
