// SPDX-License-Identifier: GPL-2.0-only
// The registry's decisions: what each command does to a copy of it, with
// the refusals (codes, spans, texts, errnos) the kernel gives for them.
#include <fmt/format.h>

#include <algorithm>

#include "histd/registry.h"

namespace histd::registry {

namespace {

using Id = catalog::EventId;

Refusal refused(Diagnostic d, int err = EINVAL) {
  // A writer refused what it may not see is refused permission.
  if (err == EINVAL && d.code == ErrorCode::AddressHidden) err = EPERM;
  return Refusal{std::move(d), Error{err == EINVAL ? ErrorKind::Invalid : ErrorKind::Busy, err, {}}, {}};
}

Refusal refused(ErrorKind kind, int err, std::string what) {
  return Refusal{std::nullopt, Error{kind, err, std::move(what)}, {}};
}

}  // namespace

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
    if (triggers + new_triggers > o.max_triggers) {
      std::string detail = fmt::format("the limit is {} and {} are in use", o.max_triggers, triggers);
      if (new_triggers > 1) detail += fmt::format("; this command needs {} with its field variables", new_triggers);
      return refused(Diagnostic{ErrorCode::TriggerLimit, trigger_span, command, std::move(detail)}, ENOSPC);
    }
    const uint64_t here = r.map_memory();
    const uint64_t in_use = here + o.map_memory_elsewhere;
    if (needs > o.max_map_memory || in_use > o.max_map_memory || in_use + needs > o.max_map_memory) {
      std::string detail =
          fmt::format("it needs {} bytes, {} of the {} bytes allowed are in use", needs, in_use, o.max_map_memory);
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

Work::Outcome Work::add_field_vars(const Id& id, const parse::HistCommand& cmd, std::vector<uint64_t>& created) {
  auto at_param = [&](const std::string& param) {
    const uint32_t pos = parse::errpos(cmd.command, param);
    return Span{pos, pos + uint32_t(param.size())};
  };
  for (const plan::FieldVarNeed& need : plan::field_var_needs(cmd, id.system, id.name, planning())) {
    const Id other{need.system, need.event};
    auto format = r.format(other);
    if (!format || !(*format)->find(need.field)) continue;  // planning says "Couldn't find param"
    // The field variable would copy the address.
    if (opaque_addresses && (*format)->find(need.field)->kernel_address)
      return refused(Diagnostic{ErrorCode::AddressHidden, at_param(need.param), cmd.command,
                                plan::hidden_address_use(need.param)});
    // Keyed like the matching event's histogram, under its filter, as the
    // kernel's create_field_var_hist() does.
    const HistTrigger* model = nullptr;
    if (const EventTriggers* ev = r.triggers(other)) {
      for (const HistTrigger& t : ev->hist)
        if (!model && !t.plan.vars.empty()) model = &t;
      if (!model && !ev->hist.empty()) model = &ev->hist.front();
    }
    if (!model) return refused(Diagnostic{ErrorCode::HistNotFound, at_param(need.param), cmd.command, {}});
    // Room for this field variable's trigger and the command's own.
    if (auto over = check_limits(cmd.command, 2, at_param(need.param), 0, Span{0, 0})) return over;
    const HistTrigger model_copy = *model;
    tried_on.push_back(other);
    const uint64_t next = r.next_uid_;
    auto no = add_field_var(need, model_copy, **format);
    if (no && no->diagnostic) {
      // Refused on the matching event as a command there would be (its own
      // error_log entry), then on this one.
      Diagnostic theirs = *no->diagnostic;
      Refusal out = no->error.err == ENOSPC
                        ? refused(Diagnostic{theirs.code, at_param(need.param), cmd.command,
                                             "the field variable for " + need.param + ": " + theirs.detail},
                                  ENOSPC)
                        : refused(Diagnostic{ErrorCode::FieldVarCreateFail, at_param(need.param), cmd.command, {}});
      out.logged_on.emplace_back(other, std::move(theirs));
      return out;
    }
    if (no) return refused(Diagnostic{ErrorCode::FieldVarCreateFail, at_param(need.param), cmd.command, {}});
    if (r.next_uid_ > next) {
      created.push_back(next);
      changes.back().param = need.param;
    }
  }
  return std::nullopt;
}

Work::Outcome Work::control(const Id& id, const parse::ControlCommand& cmd, const std::string& config) {
  if (cmd.has_target()) {
    const Id target{cmd.system, cmd.event};
    if (!r.exists(target)) return refused(Diagnostic{ErrorCode::InvalidSubsysEvent, cmd.system_span, cmd.command, {}});
    // enable_event/disable_event record the target: histd records kernel
    // tracepoint events (a synthetic event's trace line is its enable file's).
    if (!cmd.targets_hist() && !catalog::source_traits(r.source(target)).kernel_tracepoint)
      return refused(Diagnostic{ErrorCode::Unsupported, cmd.event_span, cmd.command,
                                "enable_event and disable_event of an event that is not a kernel tracepoint"});
  }
  std::optional<plan::TypedFilter> filter;
  if (cmd.filter) {
    auto format = r.format(id);
    if (!format) return Refusal{std::nullopt, std::move(format).error(), {}};
    auto typed = plan::plan_filter(*cmd.filter, **format, cmd.command, opaque_addresses && !cmd.remove);
    if (!typed) return refused(std::move(typed).error());
    filter = std::move(*typed);
  }
  // As the kernel, one trigger of a type per event (per target for the
  // *_event and *_hist kinds); removal matches on the type alone.
  EventTriggers& ev = at(id);
  auto found = std::find_if(ev.controls.begin(), ev.controls.end(),
                            [&](const ControlTrigger& e) { return e.cmd.same_type(cmd); });
  if (cmd.remove) {
    if (found != ev.controls.end()) {
      changes.push_back(Change{Change::Kind::ControlRemoved, id, 0, found->cmd, {}});
      ev.controls.erase(found);
    }
    tidy(id);
    return std::nullopt;
  }
  if (found != ev.controls.end()) return refused(Diagnostic{ErrorCode::TriggerEexist, Span{0, 0}, cmd.command, {}});
  if (auto over = check_limits(cmd.command, 1, Span{0, 0}, 0, Span{0, 0})) return over;
  ev.controls.insert(ev.controls.begin(), ControlTrigger{cmd, std::move(filter), config});
  changes.push_back(Change{Change::Kind::ControlAdded, id, 0, cmd, {}});
  return std::nullopt;
}

// As the kernel's trigger file opened with O_TRUNC (event_trigger_regex_open
// calls each command's unreg_all): the event's hist triggers go unless a
// variable of one is used elsewhere (then all stay, and the open still
// succeeds), and so do its enable_hist and disable_hist triggers; traceon,
// traceoff, snapshot, stacktrace, enable_event and disable_event stay.
Work::Outcome Work::truncate(const Id& id) {
  const EventTriggers* ev = r.triggers(id);
  if (!ev) return std::nullopt;
  std::set<uint64_t> going;
  for (const HistTrigger& t : ev->hist) going.insert(t.uid);
  const bool hist_stays = r.referenced_by(going).has_value();
  const bool others_stay = std::any_of(ev->controls.begin(), ev->controls.end(),
                                       [](const ControlTrigger& c) { return !c.cmd.targets_hist(); });
  if (!hist_stays && !others_stay) {
    // One change: the event's program goes at once, not trigger by trigger.
    r.events_.erase(id);
    changes.push_back(Change{Change::Kind::EventTruncated, id, 0, {}, {}});
    tidy(id);
    for (uint64_t uid : going) remove_field_vars_of(uid);
    return std::nullopt;
  }
  EventTriggers& e = at(id);
  for (auto it = e.controls.begin(); it != e.controls.end();) {
    if (!it->cmd.targets_hist()) {
      ++it;
      continue;
    }
    changes.push_back(Change{Change::Kind::ControlRemoved, id, 0, it->cmd, {}});
    it = e.controls.erase(it);
  }
  if (!hist_stays)
    for (uint64_t uid : going) {
      remove_uid(uid);
      remove_field_vars_of(uid);
    }
  tidy(id);
  return std::nullopt;
}

Work::Outcome Work::remove(const TriggerRemove& rm) {
  EventTriggers& ev = at(rm.event);
  if (rm.control) {
    auto found = std::find_if(ev.controls.begin(), ev.controls.end(),
                              [&](const ControlTrigger& e) { return e.cmd.same_type(*rm.control); });
    if (found == ev.controls.end()) return refused(ErrorKind::NotFound, ENOENT, "no such trigger: " + rm.command);
    changes.push_back(Change{Change::Kind::ControlRemoved, rm.event, 0, found->cmd, {}});
    ev.controls.erase(found);
    tidy(rm.event);
    return std::nullopt;
  }
  if (std::none_of(ev.hist.begin(), ev.hist.end(), [&](const HistTrigger& t) { return t.uid == rm.uid; }))
    return refused(ErrorKind::NotFound, ENOENT, "no such trigger: " + rm.command);
  if (auto user = r.referenced_by({rm.uid}))
    return refused(Diagnostic{ErrorCode::VarBusy, Span{0, 0}, rm.command, "used by " + *user});
  remove_uid(rm.uid);
  remove_field_vars_of(rm.uid);
  return std::nullopt;
}

Work::Outcome Work::synth_line(const SynthWrite& w) {
  const std::string& name = w.command.definition.name;
  const Id id{std::string(catalog::kSynthSystem), name};
  if (w.command.remove) {
    if (!r.synths_.count(name)) return refused(ErrorKind::NotFound, ENOENT, "no synthetic event " + name);
    if (r.synth_in_use(name)) return refused(ErrorKind::Busy, EBUSY, "synthetic event " + name + " is in use");
    r.synths_.erase(name);
    r.events_.erase(id);
    changes.push_back(Change{Change::Kind::SynthRemoved, id, 0, {}, name});
    return std::nullopt;
  }
  // As __create_synth_event(): an existing name is EEXIST; histd's own limit is ENOSPC.
  const Span at_name{0, static_cast<uint32_t>(name.size())};
  if (r.exists(id))
    return Refusal{Diagnostic{ErrorCode::SynthEventExists, at_name, w.command.command, {}},
                   Error{ErrorKind::Invalid, EEXIST, {}},
                   {}};
  // Counted apart from triggers, against a limit of their own: each takes
  // two control slots, which once ran out for triggers with a bare ENOSPC.
  if (r.synths_.size() >= r.options_.max_synthetic_events)
    return refused(Diagnostic{ErrorCode::SyntheticLimit, at_name, w.command.command,
                              fmt::format("the limit is {} and {} are defined", r.options_.max_synthetic_events,
                                          r.synths_.size())},
                   ENOSPC);
  r.synths_[name] = Synthetic{w.command.definition, r.next_synth_id_++, false, w.config};
  changes.push_back(Change{Change::Kind::SynthDefined, id, 0, {}, name});
  return std::nullopt;
}

Work::Outcome Work::synth_truncate() {
  for (const auto& [name, s] : r.synths_)
    if (r.synth_in_use(name)) return refused(ErrorKind::Busy, EBUSY, "synthetic event " + name + " is in use");
  for (const auto& [name, s] : r.synths_) {
    const Id id{std::string(catalog::kSynthSystem), name};
    r.events_.erase(id);
    changes.push_back(Change{Change::Kind::SynthRemoved, id, 0, {}, name});
  }
  r.synths_.clear();
  return std::nullopt;
}

Work::Outcome Work::synth_enable(const SynthEnable& e) {
  auto s = r.synths_.find(e.name);
  if (s == r.synths_.end()) return refused(ErrorKind::NotFound, ENOENT, "no synthetic event " + e.name);
  s->second.enabled = e.on;
  changes.push_back(Change{e.on ? Change::Kind::SynthEnabled : Change::Kind::SynthDisabled,
                           Id{std::string(catalog::kSynthSystem), e.name},
                           0,
                           {},
                           e.name});
  return std::nullopt;
}

Work::Outcome Work::mark(const TriggerMark& m) {
  for (auto& [id, ev] : r.events_)
    for (HistTrigger& t : ev.hist) {
      if (t.uid != m.uid) continue;
      t.paused = m.paused;
      t.config = m.config;
      changes.push_back(
          Change{m.paused ? Change::Kind::TriggerPaused : Change::Kind::TriggerContinued, id, t.uid, {}, {}});
      return std::nullopt;
    }
  return refused(ErrorKind::NotFound, ENOENT, fmt::format("no trigger {}", m.uid));
}

Work::Outcome Work::event_enable(const EventEnable& e) {
  const catalog::EventId& id = e.event;
  if (id.system == catalog::kSynthSystem) return synth_enable(SynthEnable{id.name, e.on});
  if (!r.exists(id)) return refused(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", id.system, id.name));
  if (e.on == (r.enabled_.count(id) > 0)) return std::nullopt;  // as it is: nothing to do
  if (e.on) {
    // As tracefs, which gives ftrace's own events no enable file.
    if (!catalog::source_traits(r.source(id)).has_enable_file)
      return refused(
          ErrorKind::NotFound, ENOENT,
          fmt::format("{}:{} has no enable file: trace_marker's lines are always recorded", id.system, id.name));
    // Each enabled event is a program of its own, like a trigger: the same
    // ceiling keeps `echo 1 > events/enable` from loading thousands.
    if (r.enabled_.size() >= r.options_.max_triggers)
      return refused(
          ErrorKind::Busy, ENOSPC,
          fmt::format("at most {} events are enabled at once (histd's trigger limit)", r.options_.max_triggers));
    r.enabled_.insert(id);
  } else {
    r.enabled_.erase(id);
  }
  changes.push_back(Change{e.on ? Change::Kind::EventEnabled : Change::Kind::EventDisabled, id, 0, {}, {}});
  return std::nullopt;
}

Result<Applied, Refusal> Registry::apply(const Command& command) const {
  Work w{*this, {}};
  Work::Outcome no;
  if (const auto* t = std::get_if<TriggerWrite>(&command)) {
    if (!exists(t->event))
      return unexpected(
          refused(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", t->event.system, t->event.name)));
    if (eprobe_on_synthetic(t->event))
      return unexpected(refused(Diagnostic{ErrorCode::Unsupported, Span{0, 0}, t->logged(),
                                           "triggers on an eprobe of a synthetic event (its enable file works)"}));
    w.opaque_addresses = !t->may_see_addresses;
    if (const auto* h = std::get_if<parse::HistCommand>(&t->command))
      no = w.hist(t->event, *h, t->config);
    else
      no = w.control(t->event, std::get<parse::ControlCommand>(t->command), t->config);
  } else if (const auto* tr = std::get_if<TriggerTruncate>(&command)) {
    no = w.truncate(tr->event);
  } else if (const auto* rm = std::get_if<TriggerRemove>(&command)) {
    no = w.remove(*rm);
  } else if (const auto* s = std::get_if<SynthWrite>(&command)) {
    no = w.synth_line(*s);
  } else if (std::holds_alternative<SynthTruncate>(command)) {
    no = w.synth_truncate();
  } else if (const auto* e = std::get_if<SynthEnable>(&command)) {
    no = w.synth_enable(*e);
  } else if (const auto* m = std::get_if<TriggerMark>(&command)) {
    no = w.mark(*m);
  } else if (const auto* p = std::get_if<ProbeWrite>(&command)) {
    return apply_probe(*p);
  } else if (std::holds_alternative<ProbeTruncate>(command)) {
    return apply_probe_truncate();
  } else {
    no = w.event_enable(std::get<EventEnable>(command));
  }
  if (no) {
    no->tried_on = std::move(w.tried_on);
    return unexpected(std::move(*no));
  }
  return Applied{std::move(w.r), std::move(w.changes)};
}

}  // namespace histd::registry
