// SPDX-License-Identifier: GPL-2.0-only
// The registry's work on one command (apply.cpp, synth_apply.cpp): a copy of
// the registry, the changes made to it, and the refusals. Private to
// lib/registry.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "histd/registry.h"

namespace histd::registry {

using Id = catalog::EventId;

inline Refusal refused(Diagnostic d, int err = EINVAL) {
  // A writer refused what it may not see is refused permission.
  if (err == EINVAL && d.code == ErrorCode::AddressHidden) err = EPERM;
  return Refusal{std::move(d), Error{err == EINVAL ? ErrorKind::Invalid : ErrorKind::Busy, err, {}}, {}};
}

inline Refusal refused(ErrorKind kind, int err, std::string what) {
  return Refusal{std::nullopt, Error{kind, err, std::move(what)}, {}};
}

// A command applied to a copy of the registry; the copy becomes the next
// registry only when the whole command is decided.
struct Work {
  Registry r;
  std::vector<Change> changes;
  std::vector<Id> tried_on;  // the events field variables were tried on (Refusal::tried_on)
  // The writer may not see kernel addresses (TriggerWrite::may_see_addresses).
  bool opaque_addresses = false;
  using Outcome = std::optional<Refusal>;  // nullopt: decided, applied to `r`

  // What planning this command consults; a removal reveals nothing, so it
  // is planned as anyone's.
  plan::PlanContext planning(bool removal = false) const {
    plan::PlanContext p = r.planning();
    p.opaque_addresses = opaque_addresses && !removal;
    return p;
  }

  EventTriggers& at(const Id& id) { return r.events_[id]; }
  void tidy(const Id& id) {
    auto it = r.events_.find(id);
    if (it != r.events_.end() && it->second.empty()) r.events_.erase(it);
    // A named table lives while a trigger uses it.
    std::erase_if(r.named_, [&](const auto& n) {
      for (const auto& [eid, ev] : r.events_)
        for (const HistTrigger& t : ev.hist)
          if (t.plan.name == n.first) return false;
      return true;
    });
  }

  // A command that would go past a limit: `new_triggers` more triggers (the
  // caret at `trigger_span`), `needs` bytes more map memory (at `memory_span`).
  Outcome check_limits(const std::string& command, size_t new_triggers, Span trigger_span, uint64_t needs,
                       Span memory_span) const {
    const Options& o = r.options_;
    const size_t triggers = r.trigger_count();
    if (triggers + new_triggers > o.limits.max_triggers) {
      std::string detail = fmt::format("the limit is {} and {} are in use", o.limits.max_triggers, triggers);
      if (new_triggers > 1) detail += fmt::format("; this command needs {} with its field variables", new_triggers);
      return refused(Diagnostic{ErrorCode::TriggerLimit, trigger_span, command, std::move(detail)}, ENOSPC);
    }
    const uint64_t here = r.map_memory();
    const uint64_t in_use = here + o.map_memory_elsewhere;
    if (needs > o.limits.max_map_memory || in_use > o.limits.max_map_memory ||
        in_use + needs > o.limits.max_map_memory) {
      std::string detail = fmt::format("it needs {} bytes, {} of the {} bytes allowed are in use", needs, in_use,
                                       o.limits.max_map_memory);
      if (o.map_memory_elsewhere) detail += fmt::format(" ({} of them by other trees)", o.map_memory_elsewhere);
      return refused(Diagnostic{ErrorCode::MapMemoryLimit, memory_span, command, std::move(detail)}, ENOSPC);
    }
    return std::nullopt;
  }

  void remove_uid(uint64_t uid) {
    for (auto& [id, ev] : r.events_) {
      auto it = std::find_if(ev.hist.begin(), ev.hist.end(), [&](const HistTrigger& t) { return t.uid == uid; });
      if (it == ev.hist.end()) continue;
      ev.hist.erase(it);
      changes.push_back(Change{Change::Kind::TriggerRemoved, id, uid, {}, {}});
      tidy(Id{id});
      return;
    }
  }

  // The field-variable triggers made for trigger `uid`, once nothing else uses them.
  void remove_field_vars_of(uint64_t uid) {
    std::vector<uint64_t> made;
    for (const auto& [id, ev] : r.events_)
      for (const HistTrigger& t : ev.hist)
        if (t.field_var_of == uid && !r.referenced_by({t.uid})) made.push_back(t.uid);
    for (uint64_t m : made) remove_uid(m);
  }

  Outcome conflicts(const Id& id, const parse::HistCommand& cmd, const plan::HistPlan& plan) const {
    // Variable names are unique per event, across its triggers.
    if (const EventTriggers* ev = r.triggers(id))
      for (const HistTrigger& t : ev->hist)
        for (const plan::Variable& mine : plan.vars)
          for (const plan::Variable& theirs : t.plan.vars)
            if (mine.name == theirs.name) {
              const uint32_t pos = parse::errpos(cmd.command, mine.name);
              return refused(
                  Diagnostic{ErrorCode::DuplicateVar, Span{pos, pos + uint32_t(mine.name.size())}, cmd.command, {}});
            }
    // Synthetic events run their triggers when generated: a loop would never end.
    if (r.source(id) == catalog::EventSource::Synthetic)
      for (const plan::ActionPlan& a : plan.actions)
        if (!a.synth.empty() && (a.synth == id.name || r.synth_reaches(a.synth, id.name))) {
          const uint32_t pos = parse::errpos(cmd.command, a.synth);
          return refused(Diagnostic{ErrorCode::SynthCycle, Span{pos, pos + uint32_t(a.synth.size())}, cmd.command, {}});
        }
    return std::nullopt;
  }

  Outcome add_trigger(const Id& id, const parse::HistCommand& cmd, plan::HistPlan plan, const std::string& config) {
    // Named tables must agree with the table they join.
    bool joins_table = false;
    if (plan.name) {
      if (const plan::HistPlan* existing = r.named_layout(*plan.name)) {
        if (!existing->table_compatible(plan))
          return refused(Diagnostic{ErrorCode::NamedMismatch, cmd.name_span, cmd.command, {}});
        plan.max_entries = existing->max_entries;
        plan.table_map = existing->table_map;
        joins_table = true;
      }
    }
    if (auto conflict = conflicts(id, cmd, plan)) return conflict;
    // A trigger joining a named table needs only its variable map.
    const plan::MapMemory memory = plan::map_memory(plan, r.options_.possible_cpus);
    if (auto over = check_limits(cmd.command, 1, Span{0, 0}, joins_table ? memory.vars : memory.total(),
                                 cmd.size ? cmd.size_span : Span{0, 0}))
      return over;
    if (plan.name && !joins_table) r.named_[*plan.name] = plan;
    HistTrigger t;
    t.uid = r.next_uid_++;
    t.paused = plan.control == parse::Control::Pause;
    t.plan = std::move(plan);
    t.config = config;
    changes.push_back(Change{Change::Kind::TriggerAdded, id, t.uid, {}, {}, cmd.command, {}});
    at(id).hist.push_back(std::move(t));
    return std::nullopt;
  }

  Outcome control(const Id& id, HistTrigger& t, const parse::HistCommand& cmd, parse::Control c) {
    switch (c) {
      case parse::Control::Pause:
      case parse::Control::Continue:
        t.paused = c == parse::Control::Pause;
        changes.push_back(
            Change{t.paused ? Change::Kind::TriggerPaused : Change::Kind::TriggerContinued, id, t.uid, {}, {}});
        return std::nullopt;
      case parse::Control::Clear:
        changes.push_back(Change{Change::Kind::TriggerCleared, id, t.uid, {}, {}});
        return std::nullopt;
      case parse::Control::None:
        break;
    }
    return refused(Diagnostic{ErrorCode::TriggerEexist, Span{0, 0}, cmd.command, {}});
  }

  // Acts on the trigger of the same plan::TriggerKey, or adds one.
  Outcome apply_plan(const Id& id, const parse::HistCommand& cmd, plan::HistPlan plan, const std::string& config) {
    const plan::TriggerKey key = plan::trigger_key(plan);
    EventTriggers& ev = at(id);
    auto found = std::find_if(ev.hist.begin(), ev.hist.end(),
                              [&](const HistTrigger& t) { return plan::trigger_key(t.plan) == key; });
    if (plan.remove) {
      // As in the kernel, removing a trigger that does not exist is not an error.
      if (found == ev.hist.end()) return std::nullopt;
      const uint64_t uid = found->uid;
      if (auto user = r.referenced_by({uid}))
        return refused(Diagnostic{ErrorCode::VarBusy, Span{0, 0}, cmd.command, "used by " + *user});
      remove_uid(uid);
      remove_field_vars_of(uid);
      return std::nullopt;
    }
    if (found != ev.hist.end()) return control(id, *found, cmd, plan.control);
    if (plan.control == parse::Control::Continue || plan.control == parse::Control::Clear)
      return refused(Diagnostic{ErrorCode::TriggerEnoentClear, Span{0, 0}, cmd.command, {}});
    return add_trigger(id, cmd, std::move(plan), config);
  }

  Outcome add_field_var(const plan::FieldVarNeed& need, const HistTrigger& model, const catalog::EventFormat& format) {
    const Id other{need.system, need.event};
    auto planned = plan::plan_field_var(need, model.plan, format, planning());
    if (!planned) return refused(std::move(planned).error());
    return apply_plan(other, planned->command, std::move(planned->plan), {});
  }

  // The implicit field variables ("synthetic_<field>") that a command's
  // onmatch() params need on their matching event, created as triggers there.
  Outcome add_field_vars(const Id& id, const parse::HistCommand& cmd, std::vector<uint64_t>& created);

  Outcome hist(const Id& id, const parse::HistCommand& cmd, const std::string& config) {
    // onmatch() params naming fields of the matching event need the kernel's
    // implicit field variables there first.
    std::vector<uint64_t> field_vars;
    if (auto no = add_field_vars(id, cmd, field_vars)) return no;
    auto format = r.format(id);
    if (!format) return Refusal{std::nullopt, std::move(format).error(), {}};
    auto planned = plan::plan_hist(cmd, **format, planning(cmd.remove));
    if (!planned) return refused(std::move(planned).error());
    const uint64_t next = r.next_uid_;
    if (auto no = apply_plan(id, cmd, std::move(*planned), config)) return no;
    const bool created = r.next_uid_ > next;
    for (uint64_t uid : field_vars) {
      if (!created) {
        remove_uid(uid);
        continue;
      }
      for (auto& [eid, ev] : r.events_)
        for (HistTrigger& t : ev.hist)
          if (t.uid == uid) t.field_var_of = next;
    }
    tidy(id);
    return std::nullopt;
  }

  Outcome control(const Id& id, const parse::ControlCommand& cmd, const std::string& config);
  Outcome truncate(const Id& id);
  Outcome remove(const TriggerRemove& rm);
  Outcome synth_line(const SynthWrite& w);
  Outcome synth_truncate();
  Outcome synth_enable(const SynthEnable& e);
  Outcome mark(const TriggerMark& m);
  Outcome event_enable(const EventEnable& e);
};

}  // namespace histd::registry
