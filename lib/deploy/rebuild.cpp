// SPDX-License-Identifier: GPL-2.0-only
// The control triggers: they live on one event and, from BPF, flip the
// pause flags of another event's hist triggers (enable_hist/disable_hist) or
// its recording (enable_event/disable_event), or tracing_on, or ask histd
// for a snapshot or send the stack; and the recording of enabled events.
#include <fmt/format.h>

#include <algorithm>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"
#include "deploy/synthetic_events.h"
#include "hist_shared.h"

namespace histd::deploy {

void Deployer::refresh_enablers_of(const EventState& target) {
  for (auto& [id, ev] : events_) {
    const bool targets = std::any_of(ev->controls.begin(), ev->controls.end(), [&](const auto& e) {
      return e->cmd.targets_hist() && e->cmd.system == target.system && e->cmd.event == target.event;
    });
    if (!targets) continue;
    auto st = programs_->rebuild(*ev, triggers_of(*ev), controls_of(*ev));
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
  (void)objects_->write_control(e->slot, c);
  // enable_event/disable_event: the target records under a slot they flip.
  if (auto held = hold_target(*e); !held) {
    objects_->release_slot(e->slot);
    return system_failure(std::move(held).error());
  }
  std::vector<DeployedControl*> all{e.get()};
  for (auto& other : ev.controls) all.push_back(other.get());
  auto st = programs_->rebuild(ev, triggers_of(ev), all);
  if (!st) {
    release_control(*e);
    return rebuild_failure(ev, e->cmd.command, std::move(st).error());
  }
  // A snapshot trigger allocates the snapshot buffer (tracing_arm_snapshot()).
  if (e->cmd.kind == parse::ControlCommand::Kind::Snapshot) ring_->allocate_snapshot();
  ev.controls.insert(ev.controls.begin(), std::move(e));
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) {
    // The events generating this one run its controls in their programs.
    auto generators = synthetics_->rebuild_generators(ev.event);
    if (!generators) {
      std::unique_ptr<DeployedControl> added = std::move(ev.controls.front());
      ev.controls.erase(ev.controls.begin());
      (void)programs_->rebuild(ev, triggers_of(ev), controls_of(ev));
      (void)synthetics_->rebuild_generators(ev.event);
      release_control(*added);
      return rebuild_failure(ev, added->cmd.command, std::move(generators).error());
    }
    (void)synthetics_->refresh(ev.event);
  }
  return Unit{};
}

CommandResult Deployer::remove_control(EventState& ev, DeployedControl* going) {
  std::vector<DeployedControl*> rest;
  for (auto& e : ev.controls)
    if (e.get() != going) rest.push_back(e.get());
  auto st = programs_->rebuild(ev, triggers_of(ev), rest);
  if (!st) return unexpected(CommandFailure{std::nullopt, std::move(st).error()});
  // Out of the event before its release, which may rebuild the event itself
  // (an enable_event of its own event).
  auto it = std::find_if(ev.controls.begin(), ev.controls.end(), [&](const auto& e) { return e.get() == going; });
  std::unique_ptr<DeployedControl> gone = std::move(*it);
  ev.controls.erase(it);
  release_control(*gone);
  synthetics_->after_removal(ev);
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

CommandResult Deployer::filter_event(EventState& ev, const registry::Registry& next) {
  auto f = next.filters().find(catalog::EventId{ev.system, ev.event});
  ev.record_filter_before = ev.record_filter;
  auto st = refilter(ev, f == next.filters().end() ? std::nullopt : std::optional(f->second.typed));
  if (!st) return system_failure(std::move(st).error());
  return Unit{};
}

Status Deployer::refilter(EventState& ev, std::optional<plan::TypedFilter> filter) {
  if (ev.record_filter == filter) return ok_status();
  std::optional<plan::TypedFilter> was = std::exchange(ev.record_filter, std::move(filter));
  // Only a recorded event's program tests it; the others take it when
  // they start recording.
  if (!ev.recorded() || !ev.record_slot) return ok_status();
  auto st = programs_->rebuild(ev, triggers_of(ev), controls_of(ev));
  if (!st) ev.record_filter = std::move(was);
  return st;
}

Status Deployer::start_recording(EventState& ev) {
  // Its records are printed with its format's print fmt.
  if (auto learned = ring_->learn_format(catalog_, ev.system, ev.event); !learned) return learned;
  auto slot = objects_->allocate_slot();
  if (!slot) return unexpected(std::move(slot).error());
  ev.record_slot = *slot;
  auto st = objects_->set_paused(*slot, !ev.enabled);
  if (st) st = programs_->rebuild(ev, triggers_of(ev), controls_of(ev));
  if (st) st = synthetics_->refresh_eprobe_generators(ev);
  if (!st) {
    objects_->release_slot(*slot);
    ev.record_slot.reset();
    (void)synthetics_->refresh_eprobe_generators(ev);
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
    (void)programs_->rebuild(ev, triggers_of(ev), controls_of(ev));
    (void)synthetics_->refresh_eprobe_generators(ev);
  }
  objects_->release_slot(slot);
}

}  // namespace histd::deploy
