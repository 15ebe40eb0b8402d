// SPDX-License-Identifier: GPL-2.0-only
// The registry's decisions: what each command does to a copy of it, with
// the refusals (codes, spans, texts, errnos) the kernel gives for them.
#include <fmt/format.h>

#include <algorithm>

#include "histd/registry.h"
#include "registry/work.h"

namespace histd::registry {

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
  std::erase_if(at(id).controls, [&](const ControlTrigger& c) {
    if (c.cmd.targets_hist()) changes.push_back(Change{Change::Kind::ControlRemoved, id, 0, c.cmd, {}});
    return c.cmd.targets_hist();
  });
  for (uint64_t uid : hist_stays ? std::set<uint64_t>{} : going) {
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
    if (r.enabled_.size() >= r.options_.limits.max_triggers)
      return refused(
          ErrorKind::Busy, ENOSPC,
          fmt::format("at most {} events are enabled at once (histd's trigger limit)", r.options_.limits.max_triggers));
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
  } else if (const auto* f = std::get_if<EventFilter>(&command)) {
    return apply_filter(*f);
  } else if (const auto* sf = std::get_if<SystemFilter>(&command)) {
    return apply_system_filter(*sf);
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
