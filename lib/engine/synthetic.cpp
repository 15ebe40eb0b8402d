// The engine's inter-event side: the variable registry planning consults,
// synthetic events (definitions, control; delivery is in delivery.cpp),
// the trace buffer and trace_marker.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "engine/engine_state.h"
#include "hist_shared.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

uint64_t monotonic_ns() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

CommandResult busy(std::string what) {
  return unexpected(CommandFailure{std::nullopt, Error{ErrorKind::Busy, EBUSY, std::move(what)}});
}

}  // namespace

plan::Registry Engine::registry() const {
  plan::Registry reg;
  reg.catalog = &catalog_;
  reg.tables = {possible_cpus_, options_.percpu_table_limit};
  for (const auto& [id, ev] : events_)
    for (const auto& t : ev->triggers)
      for (const plan::Variable& v : t->plan.vars) {
        plan::RegisteredVar rv;
        rv.system = ev->system;
        rv.event = ev->event;
        rv.name = v.name;
        rv.owner = t->uid;
        rv.slot = v.slot;
        rv.key_size = t->plan.key_size;
        rv.record_size = t->plan.var_record_size;
        rv.record_offset = t->plan.record_offset();
        rv.type = v.expr;
        rv.type.ops.clear();
        rv.type.root = -1;
        reg.vars.push_back(std::move(rv));
      }
  for (const auto& [name, s] : synths_) reg.synths.push_back(s.def);
  return reg;
}

std::pair<Engine::EventState*, Engine::Trigger*> Engine::find_trigger(uint64_t uid) const {
  for (const auto& [id, ev] : events_)
    for (const auto& t : ev->triggers)
      if (t->uid == uid) return {ev.get(), t.get()};
  return {nullptr, nullptr};
}

std::optional<std::string> Engine::referenced_by(const std::vector<const Trigger*>& going) const {
  std::set<uint64_t> uids;
  for (const Trigger* t : going) uids.insert(t->uid);
  for (const auto& [id, ev] : events_)
    for (const auto& t : ev->triggers) {
      if (uids.count(t->uid)) continue;
      for (const plan::VarRef& r : t->plan.refs)
        if (!r.self && uids.count(r.owner)) return fmt::format("{}:{}", id.system, id.name);
    }
  return std::nullopt;
}

bool Engine::synth_in_use(const std::string& name) const {
  // An enabled event is busy too, as trace_event_dyn_busy() makes it.
  if (auto s = synths_.find(name); s != synths_.end() && s->second.enabled) return true;
  for (const auto& [id, ev] : events_) {
    if (id.system == kSynthSystem && id.name == name && !ev->triggers.empty()) return true;
    for (const auto& t : ev->triggers)
      for (const plan::ActionPlan& a : t->plan.actions)
        if (a.synth == name) return true;
  }
  return false;
}

bool Engine::synth_reaches(const std::string& from, const std::string& to) const {
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

Status Engine::refresh_synth(const std::string& name) {
  auto s = synths_.find(name);
  if (s == synths_.end()) return ok_status();
  auto ev = events_.find(catalog::EventId{kSynthSystem, name});
  const bool has_triggers = ev != events_.end() && (!ev->second->triggers.empty() || !ev->second->enables.empty());
  auto st = set_paused(s->second.trace_slot, !s->second.enabled);
  if (!st) return st;
  return set_paused(s->second.slot, !(s->second.enabled || has_triggers));
}

Status Engine::rebuild_generators(const std::string& name) {
  for (auto& [id, ev] : events_) {
    bool generates = false;
    for (const auto& t : ev->triggers)
      for (const plan::ActionPlan& a : t->plan.actions)
        generates = generates || (!a.synth.empty() && (a.synth == name || synth_reaches(a.synth, name)));
    if (!generates) continue;
    auto st = rebuild(*ev, triggers_of(*ev), enables_of(*ev));
    if (!st) return st;
  }
  return ok_status();
}

void Engine::after_synth_removal(EventState& ev) {
  if (catalog_.source(ev.system, ev.event) != catalog::EventSource::Synthetic) return;
  (void)refresh_synth(ev.event);
  // A smaller program than the one it replaces: failing here is not expected.
  (void)rebuild_generators(ev.event);
}

CommandResult Engine::synth_error(Diagnostic d) {
  log_error("synthetic_events", d);
  // As __create_synth_event(): an existing name is EEXIST, the rest EINVAL;
  // histd's own limit is ENOSPC, as its other limits.
  const int err = d.code == ErrorCode::SynthEventExists ? EEXIST : d.code == ErrorCode::SyntheticLimit ? ENOSPC : EINVAL;
  return unexpected(CommandFailure{std::move(d), Error{err == ENOSPC ? ErrorKind::Busy : ErrorKind::Invalid, err, {}}});
}

CommandResult Engine::write_synthetic(std::string_view text) {
  std::lock_guard lock(mu_);
  return write_synthetic_locked(text);
}

CommandResult Engine::write_synthetic_locked(std::string_view text) {
  if (auto room = reserve_state(text.size()); !room)
    return finish_command("synthetic_events", text, nullptr, system_failure(std::move(room).error()));
  CommandResult r = apply_synthetic(text);
  // The lines before a failing one stay applied, as in the kernel: the
  // state is saved either way.
  if (r) return finish_command("synthetic_events", text, nullptr, std::move(r));
  (void)finish_command("synthetic_events", text, nullptr, Unit{});
  return finish_command("synthetic_events", text, nullptr, std::move(r));
}

CommandResult Engine::apply_synthetic(std::string_view text) {
  // Like the kernel, one command per line; the first failing line stops.
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    auto parsed = synth::parse_synth_command(line);
    if (!parsed) {
      if (parsed.error().code == ErrorCode::EmptyCommand) continue;
      return synth_error(std::move(parsed).error());
    }
    const std::string& name = parsed->definition.name;
    if (parsed->remove) {
      auto it = synths_.find(name);
      if (it == synths_.end())
        return unexpected(CommandFailure{std::nullopt, Error{ErrorKind::NotFound, ENOENT, "no synthetic event " + name}});
      if (synth_in_use(name)) return busy("synthetic event " + name + " is in use");
      catalog_.remove_dynamic(kSynthSystem, name);
      release_slot(it->second.slot);
      release_slot(it->second.trace_slot);
      events_.erase(catalog::EventId{kSynthSystem, name});
      synths_.erase(it);
      continue;
    }
    if (synths_.count(name) || catalog_.contains(kSynthSystem, name))
      return synth_error(Diagnostic{ErrorCode::SynthEventExists, Span{0, static_cast<uint32_t>(name.size())},
                                    parsed->command, {}});
    // Counted apart from triggers, against a limit of their own: each takes
    // two control slots, which once ran out for triggers with a bare ENOSPC.
    if (synths_.size() >= options_.max_synthetic_events)
      return synth_error(Diagnostic{ErrorCode::SyntheticLimit, Span{0, static_cast<uint32_t>(name.size())},
                                    parsed->command,
                                    fmt::format("the limit is {} and {} are defined", options_.max_synthetic_events,
                                                synths_.size())});
    auto slot = allocate_slot();
    if (!slot) return system_failure(std::move(slot).error());
    auto trace_slot = allocate_slot();
    if (!trace_slot) {
      release_slot(*slot);
      return system_failure(std::move(trace_slot).error());
    }
    SynthState s;
    s.def = parsed->definition;
    s.id = next_synth_id_++;
    s.slot = *slot;
    s.trace_slot = *trace_slot;
    auto st = set_paused(s.slot, true);
    if (st) st = set_paused(s.trace_slot, true);
    if (!st) {
      release_slot(s.slot);
      release_slot(s.trace_slot);
      return system_failure(std::move(st).error());
    }
    catalog_.add_dynamic(synth::format_of(s.def, s.id));
    synths_[name] = std::move(s);
  }
  return Unit{};
}

CommandResult Engine::truncate_synthetic() {
  std::lock_guard lock(mu_);
  for (const auto& [name, s] : synths_)
    if (synth_in_use(name)) return busy("synthetic event " + name + " is in use");
  if (synths_.empty()) return Unit{};
  if (auto room = reserve_state(0); !room)
    return finish_command("synthetic_events", "(truncate)", nullptr, system_failure(std::move(room).error()));
  for (const auto& [name, s] : synths_) {
    catalog_.remove_dynamic(kSynthSystem, name);
    release_slot(s.slot);
    release_slot(s.trace_slot);
    events_.erase(catalog::EventId{kSynthSystem, name});
  }
  synths_.clear();
  return finish_command("synthetic_events", "(truncate)", nullptr, Unit{});
}

std::vector<synth::SynthDefinition> Engine::synthetic_events() {
  std::lock_guard lock(mu_);
  std::vector<synth::SynthDefinition> out;
  for (const auto& [name, s] : synths_) out.push_back(s.def);
  return out;
}

std::vector<std::string> Engine::synthetic_names() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, s] : synths_) out.push_back(name);
  return out;
}

CommandResult Engine::set_enabled(const std::string& system, const std::string& event, bool on) {
  std::lock_guard lock(mu_);
  if (system != kSynthSystem || !synths_.count(event))
    return unexpected(CommandFailure{std::nullopt, Error{ErrorKind::NotFound, ENOENT, "only synthetic events are traced"}});
  // Saved like a command: a restart keeps tracing what was enabled.
  const std::string location = fmt::format("{}:{}/enable", kSynthSystem, event);
  const std::string_view command = on ? "1" : "0";
  if (auto room = reserve_state(0); !room)
    return finish_command(location, command, nullptr, system_failure(std::move(room).error()));
  return finish_command(location, command, nullptr, set_enabled_locked(event, on));
}

CommandResult Engine::set_enabled_locked(const std::string& event, bool on) {
  auto s = synths_.find(event);
  if (s == synths_.end())
    return unexpected(CommandFailure{std::nullopt, Error{ErrorKind::NotFound, ENOENT, "no synthetic event " + event}});
  const bool was = s->second.enabled;
  s->second.enabled = on;
  auto st = refresh_synth(event);
  if (!st) {
    s->second.enabled = was;
    return system_failure(std::move(st).error());
  }
  return Unit{};
}

bool Engine::enabled(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto s = system == kSynthSystem ? synths_.find(event) : synths_.end();
  return s != synths_.end() && s->second.enabled;
}

CommandResult Engine::write_marker(std::string_view text, uint32_t pid, const std::string& comm) {
  std::lock_guard lock(mu_);
  // As the kernel, whose marker is an event in a ring that is not
  // recording: no line, no ftrace:print for its triggers, EBADF.
  if (!trace_.recording())
    return system_failure(Error{ErrorKind::Invalid, EBADF, "tracing is off (tracing_on is 0)"});
  std::string body(text);
  if (!body.empty() && body.back() == '\n') body.pop_back();
  const uint64_t ts = monotonic_ns();
  const int cpu = sched_getcpu();
  trace_.append(trace::format_line(trace::LineHeader{comm, pid, cpu < 0 ? 0u : uint32_t(cpu), ts},
                                   "tracing_mark_write", body));
  // ftrace:print, as the kernel records a marker: ip, then the text (its
  // newline dropped), NUL-padded so that a string read never runs past it.
  auto it = events_.find(catalog::EventId{catalog::kMarkerSystem, catalog::kMarkerEvent});
  if (it == events_.end() || !it->second->program) return Unit{};
  auto format = catalog_.event(catalog::kMarkerSystem, catalog::kMarkerEvent);
  if (!format) return Unit{};
  std::vector<uint8_t> rec(16 + 256 + 8, 0);
  const uint16_t type = static_cast<uint16_t>((*format)->id);
  const int32_t spid = static_cast<int32_t>(pid);
  std::memcpy(rec.data(), &type, 2);
  std::memcpy(rec.data() + 4, &spid, 4);
  std::memcpy(rec.data() + 16, body.data(), std::min<size_t>(body.size(), 255));
  char task[16] = {};
  std::memcpy(task, comm.data(), std::min<size_t>(comm.size(), 15));
  auto rc = runtime::test_run(it->second->program->test_fd(), rec, ts, task);
  if (!rc) return system_failure(std::move(rc).error());
  return Unit{};
}

void Engine::remove_trigger_uid(uint64_t uid) {
  if (auto [ev, t] = find_trigger(uid); t) (void)remove_trigger(*ev, t);
}

void Engine::remove_field_vars_of(uint64_t uid) {
  std::vector<uint64_t> made;
  for (const auto& [id, ev] : events_)
    for (const auto& t : ev->triggers)
      if (t->field_var_of == uid && !referenced_by({t.get()})) made.push_back(t->uid);
  for (uint64_t m : made) remove_trigger_uid(m);
}

CommandResult Engine::add_field_vars(EventState& ev, const parse::HistCommand& cmd, std::vector<uint64_t>& created) {
  auto undo = [&] {
    for (uint64_t uid : created) remove_trigger_uid(uid);
    created.clear();
  };
  auto at_param = [&](const std::string& param) {
    const uint32_t pos = parse::errpos(cmd.command, param);
    return Span{pos, pos + uint32_t(param.size())};
  };
  for (const plan::FieldVarNeed& need : plan::field_var_needs(cmd, ev.system, ev.event, registry())) {
    auto other = events_.find(catalog::EventId{need.system, need.event});
    auto format = catalog_.event(need.system, need.event);
    if (!format || !(*format)->find(need.field)) continue;  // planning says "Couldn't find param"
    // Keyed like the matching event's histogram, under its filter, as the
    // kernel's create_field_var_hist() does.
    const Trigger* model = nullptr;
    if (other != events_.end()) {
      for (const auto& t : other->second->triggers)
        if (!model && !t->plan.vars.empty()) model = t.get();
      if (!model && !other->second->triggers.empty()) model = other->second->triggers.front().get();
    }
    if (!model) {
      undo();
      return user_error(ev, Diagnostic{ErrorCode::HistNotFound, at_param(need.param), cmd.command, {}});
    }
    // Room for this field variable's trigger and the command's own.
    if (auto refused = check_limits(ev, cmd.command, 2, at_param(need.param), 0, Span{0, 0})) {
      undo();
      return *refused;
    }
    auto r = add_field_var(*other->second, need, model->plan, **format);
    if (!r && r.error().error.err == ENOSPC && r.error().diagnostic) {
      // Over a limit: say so on this event too, with the limit's own words.
      undo();
      return user_error(ev,
                        Diagnostic{r.error().diagnostic->code, at_param(need.param), cmd.command,
                                   "the field variable for " + need.param + ": " + r.error().diagnostic->detail},
                        ENOSPC);
    }
    if (!r) {
      undo();
      return user_error(ev, Diagnostic{ErrorCode::FieldVarCreateFail, at_param(need.param), cmd.command, {}});
    }
    created.push_back(other->second->triggers.back()->uid);
  }
  return Unit{};
}

CommandResult Engine::add_field_var(EventState& other, const plan::FieldVarNeed& need, const plan::HistPlan& model,
                                    const catalog::EventFormat& format) {
  // As a command on the matching event would: its own error_log entry and
  // hist file error when it fails.
  other.last_error.reset();
  ++other.generation;
  auto planned = plan::plan_field_var(need, model, format, registry());
  if (!planned) return user_error(other, std::move(planned).error());
  return apply_hist_plan(other, planned->command, std::move(planned->plan));
}

}  // namespace histd::engine
