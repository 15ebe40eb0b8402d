// SPDX-License-Identifier: GPL-2.0-only
// The deployer's command path: every command is decided by the registry
// (registry::Registry::apply, pure), then carried out here change by change
// (maps, pins, control slots, program rebuilds), and only then committed by
// the engine. A change that fails undoes, in one place (roll_back), what
// the command's earlier changes created; the registry was never touched.
#include <fmt/format.h>

#include <algorithm>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"
#include "deploy/synthetic_events.h"
#include "hist_shared.h"
#include "histd/parse.h"
#include "histd/table_reader.h"

namespace histd::deploy {

using registry::Change;

namespace {

// Whether a traced synthetic event has a stack field: the ring's consumer
// then reads the kernel's symbols before it delivers one
// (TraceRing::set_synth_stacks).
bool traces_stacks(const std::map<std::string, std::unique_ptr<SynthState>>& synths) {
  return std::any_of(synths.begin(), synths.end(), [](const auto& named) {
    const SynthState& s = *named.second;
    return s.enabled && std::any_of(s.def.fields.begin(), s.def.fields.end(), [](const synth::SynthField& f) {
             return f.kind == synth::SynthField::Kind::Stack;
           });
  });
}

}  // namespace

CommandResult Deployer::deploy(const std::vector<Change>& changes, const registry::Registry& next,
                               const catalog::EventId* written, const std::string& text) {
  EventState* ev = written ? &event_state(*written) : nullptr;
  std::vector<const Change*> done;
  for (const Change& c : changes) {
    // A trigger's addition or removal, an event's enable or its filter,
    // first in its command, undoes all of itself when its rebuild fails:
    // that rebuild may leave its compile to the engine (CompileOutside).
    may_stop_ = done.empty() && (c.kind == Change::Kind::TriggerAdded || c.kind == Change::Kind::TriggerRemoved ||
                                 c.kind == Change::Kind::EventEnabled || c.kind == Change::Kind::EventFiltered);
    programs_->stop_before_compile(may_stop_);
    CommandResult r = deploy(c, next, ev, text, done.empty());
    programs_->stop_before_compile(false);
    may_stop_ = false;
    if (!r) {
      roll_back(done);
      ring_->set_synth_stacks(traces_stacks(synths_));
      return r;
    }
    done.push_back(&c);
  }
  ring_->set_synth_stacks(traces_stacks(synths_));
  return Unit{};
}

void Deployer::compile_outside(CompileOutside* outside) { programs_->compile_outside(outside); }

void Deployer::take_back(const std::vector<Change>& changes) {
  std::vector<const Change*> done;
  for (const Change& c : changes) done.push_back(&c);
  roll_back(done);
  ring_->set_synth_stacks(traces_stacks(synths_));
}

void Deployer::roll_back(const std::vector<const Change*>& done) {
  // Only additions come before a change that can fail (a command's field
  // variables before its own trigger): each goes again, newest first.
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    if ((*it)->kind == Change::Kind::TriggerAdded) remove_trigger_uid((*it)->uid);
    // A system's filter changes many events: those done take theirs back.
    if ((*it)->kind == Change::Kind::EventFiltered) {
      EventState& ev = event_state((*it)->event);
      (void)refilter(ev, std::move(ev.record_filter_before));
    }
  }
}

CommandResult Deployer::deploy(const Change& c, const registry::Registry& next, EventState* ev, const std::string& text,
                               bool first) {
  EventState& target = event_state(c.event);
  switch (c.kind) {
    case Change::Kind::TriggerAdded:
      return deploy_added(c, next, target, ev, text);
    case Change::Kind::TriggerRemoved:
      return deploy_removed(target, c.uid, first);
    case Change::Kind::TriggerPaused:
    case Change::Kind::TriggerContinued:
    case Change::Kind::TriggerCleared:
      return control_trigger(target, c);
    case Change::Kind::EventTruncated:
      return truncate_event(target);
    case Change::Kind::ControlAdded: {
      const registry::EventTriggers* triggers = next.triggers(c.event);
      auto e = std::find_if(triggers->controls.begin(), triggers->controls.end(),
                            [&](const registry::ControlTrigger& x) { return x.cmd == *c.control; });
      return deploy_control(target, *e);
    }
    case Change::Kind::ControlRemoved:
      for (const auto& e : target.controls)
        if (e->cmd.same_type(*c.control)) return remove_control(target, e.get());
      return Unit{};
    case Change::Kind::SynthDefined:
      return synthetics_->define(next.synthetics().at(c.synth));
    case Change::Kind::SynthRemoved:
      synthetics_->remove(c.synth);
      return Unit{};
    case Change::Kind::SynthEnabled:
    case Change::Kind::SynthDisabled:
      return synthetics_->enable(c.synth, c.kind == Change::Kind::SynthEnabled);
    case Change::Kind::EventEnabled:
    case Change::Kind::EventDisabled:
      return record_event(target, c.kind == Change::Kind::EventEnabled);
    case Change::Kind::EventFiltered:
      return filter_event(target, next);
    case Change::Kind::ProbeDefined:
      return define_probe(c.event, next);
    case Change::Kind::ProbeRemoved:
      catalog_.remove_dynamic(c.event.system, c.event.name);
      eprobe_filters_.erase(c.event);
      events_.erase(c.event);
      return Unit{};
  }
  return Unit{};
}

CommandResult Deployer::deploy_removed(EventState& target, uint64_t uid, bool first) {
  Trigger* t = find_trigger_in(events_, uid).second;
  if (!t) return Unit{};
  auto st = remove_trigger(target, t);
  if (st) return Unit{};
  if (first) return system_failure(std::move(st).error());
  // What follows a first removal (the field variables it leaves unused)
  // is not expected to fail; the registry no longer has it: neither may
  // the kernel side (its slot, released, reads as paused).
  drop_trigger(target, t);
  return Unit{};
}

CommandResult Deployer::define_probe(const catalog::EventId& event, const registry::Registry& next) {
  auto format = next.format(event);
  if (!format) return system_failure(std::move(format).error());
  catalog_.add_dynamic(**format);
  if (const auto& filter = next.eprobes().at(event).filter) eprobe_filters_[event] = *filter;
  return Unit{};
}

CommandResult Deployer::deploy_added(const Change& c, const registry::Registry& next, EventState& target,
                                     EventState* ev, const std::string& text) {
  const registry::HistTrigger& h = *next.find(c.uid).second;
  CommandResult r = deploy_trigger(target, h, c.command);
  if (r || c.param.empty() || !ev || r.error().error.kind == ErrorKind::NotCompiled) return r;
  const uint32_t pos = parse::errpos(text, c.param);
  const Span at_param{pos, pos + uint32_t(c.param.size())};
  if (r.error().error.err == ENOSPC && r.error().diagnostic)
    // Over a limit: say so on this event too, with the limit's own words.
    return user_error(*ev,
                      Diagnostic{r.error().diagnostic->code, at_param, text,
                                 "the field variable for " + c.param + ": " + r.error().diagnostic->detail},
                      ENOSPC);
  return user_error(*ev, Diagnostic{ErrorCode::FieldVarCreateFail, at_param, text, {}});
}

CommandResult Deployer::deploy_trigger(EventState& ev, const registry::HistTrigger& h, const std::string& command) {
  const plan::HistPlan& plan = h.plan;
  Fd vars;
  if (plan.separate_var_map()) {
    auto m =
        kernel_->create_map({BPF_MAP_TYPE_HASH, "histd_vars", plan.key_size, plan.var_record_size, plan.max_entries});
    if (!m) return system_failure(std::move(m).error());
    vars = std::move(*m);
  }
  auto table = objects_->acquire_table(plan);
  if (!table) return system_failure(std::move(table).error());
  auto slot = objects_->allocate_slot();
  if (!slot) return system_failure(std::move(slot).error());

  auto trigger = std::make_unique<Trigger>();
  trigger->plan = plan;
  trigger->uid = h.uid;
  trigger->vars = std::move(vars);
  trigger->table = std::move(*table);
  trigger->slot = *slot;
  trigger->serial = next_serial_++;
  auto st = objects_->set_paused(trigger->slot, h.paused);
  std::vector<Trigger*> all = triggers_of(ev);
  all.push_back(trigger.get());
  trigger->missed_base = event_missed(ev);
  if (st) st = programs_->rebuild(ev, all, controls_of(ev));
  if (!st) {
    release_trigger(*trigger, Release::Undo);
    return rebuild_failure(ev, command, std::move(st).error());
  }
  ev.triggers.push_back(std::move(trigger));
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) {
    // The events generating this one run its triggers in their programs.
    // The first of them may stop before its compile too: the roll back
    // below loads this event's own program as it was (nothing but histd's
    // injections, under the same lock, runs it) and the generators' again
    // from their same units.
    programs_->stop_before_compile(may_stop_);
    auto generators = synthetics_->rebuild_generators(ev.event);
    programs_->stop_before_compile(false);
    if (!generators) {
      std::unique_ptr<Trigger> added = std::move(ev.triggers.back());
      ev.triggers.pop_back();
      (void)programs_->rebuild(ev, triggers_of(ev), controls_of(ev));
      (void)synthetics_->rebuild_generators(ev.event);
      release_trigger(*added, Release::Undo);
      return rebuild_failure(ev, command, std::move(generators).error());
    }
  }
  refresh_enablers_of(ev);
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) (void)synthetics_->refresh(ev.event);
  return Unit{};
}

CommandResult Deployer::control_trigger(EventState& ev, const Change& c) {
  Trigger* t = find_trigger_in(events_, c.uid).second;
  if (!t) return Unit{};
  if (c.kind == Change::Kind::TriggerCleared) {
    auto st = table::clear_table(t->table->fds(), table_shape(t->plan));
    if (!st) return system_failure(std::move(st).error());
    t->missed_base = event_missed(ev);  // Hits start over: so does Missed
    return Unit{};
  }
  auto st = objects_->set_paused(t->slot, c.kind == Change::Kind::TriggerPaused);
  if (!st) return system_failure(std::move(st).error());
  return Unit{};
}

void Deployer::drop_trigger(EventState& ev, Trigger* going, Release how) {
  release_trigger(*going, how);
  std::erase_if(ev.triggers, [&](const auto& t) { return t.get() == going; });
}

CommandResult Deployer::truncate_event(EventState& ev) {
  auto st = programs_->rebuild(ev, {}, {});
  if (!st) return system_failure(std::move(st).error());
  for (auto& t : ev.triggers) release_trigger(*t);
  ev.triggers.clear();
  // Out of the event first: releasing an enable_event of the event itself
  // rebuilds it, which must not see them.
  std::vector<std::unique_ptr<DeployedControl>> going = std::move(ev.controls);
  ev.controls.clear();
  for (auto& e : going) release_control(*e);
  refresh_enablers_of(ev);
  synthetics_->after_removal(ev);
  return Unit{};
}

void Deployer::remove_trigger_uid(uint64_t uid) {
  if (auto [ev, t] = find_trigger_in(events_, uid); t) (void)remove_trigger(*ev, t);
}

Status Deployer::remove_trigger(EventState& ev, Trigger* going) {
  std::vector<Trigger*> rest;
  for (auto& t : ev.triggers)
    if (t.get() != going) rest.push_back(t.get());
  auto st = programs_->rebuild(ev, rest, controls_of(ev));
  if (!st) return st;
  release_trigger(*going);
  std::erase_if(ev.triggers, [&](const auto& t) { return t.get() == going; });
  refresh_enablers_of(ev);
  synthetics_->after_removal(ev);
  return ok_status();
}

}  // namespace histd::deploy
