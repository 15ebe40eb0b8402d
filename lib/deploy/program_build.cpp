// SPDX-License-Identifier: GPL-2.0-only
// build(): one of an event's programs from the deployer's state (rebuild()
// and the chain are in chain.cpp). What the program is made of is read from
// the state as pipeline::EventParts, and pipeline::compile_event() writes it
// — the same function `histctl explain` and the tests call.
#include <fmt/format.h>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"

namespace histd::deploy {

std::optional<catalog::SyscallEvent> EventPrograms::raw_syscall(const EventState& ev) const {
  auto format = catalog_.event(ev.system, ev.event);
  if (!format) return std::nullopt;
  return pipeline::syscall_entry(**format, options_.raw_syscalls);
}

std::optional<codegen::BtfEntry> EventPrograms::btf_tracepoint(const EventState& ev) const {
  auto format = catalog_.event(ev.system, ev.event);
  if (!format) return std::nullopt;
  return pipeline::btf_entry(**format, options_.btf_tracepoints);
}

pipeline::EventParts EventPrograms::event_parts(const EventState& ev, const std::vector<Trigger*>& triggers,
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
  parts.btf = ev.attachment ? ev.btf : attaches && !parts.syscall ? btf_tracepoint(ev) : std::nullopt;
  if (ev.recorded() && ev.record_slot)
    if (auto format = catalog_.event(ev.system, ev.event)) {
      parts.record = pipeline::record_input(**format);
      parts.record->slot = *ev.record_slot;
      parts.record->filter = ev.record_filter;
    }
  return parts;
}

Expected<std::map<std::string, int>> EventPrograms::unit_maps(const pipeline::EventUnit& unit,
                                                              const std::vector<Trigger*>& triggers,
                                                              const std::set<std::string>& referenced) const {
  std::map<const plan::HistPlan*, const Trigger*> by_plan;
  for (const Trigger* t : triggers) by_plan[&t->plan] = t;
  for (const auto& [id, s] : events_)
    if (id.system == kSynthSystem)
      for (const auto& t : s->triggers) by_plan[&t->plan] = t.get();
  std::map<std::string, int> maps{{codegen::kControlMap, objects_.control_fd()}};
  // The ring only for a program that sends something: one of hist triggers
  // alone makes none (an instance that records nothing maps no ring), and
  // its object's declaration is left uncreated (-1).
  maps[codegen::kRingMap] = -1;
  if (referenced.count(codegen::kRingMap)) {
    auto ring = ring_.ring_fd();
    if (!ring) return unexpected(std::move(ring).error());
    maps[codegen::kRingMap] = *ring;
  }
  maps[codegen::kLostMap] = ring_.lost_fd();
  maps[codegen::kPidsMap] = pids_.map_fd();
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
      const Trigger* owner = find_trigger_in(events_, r.owner).second;
      if (!owner || owner->record_map() < 0)
        return fail(ErrorKind::Invalid, ENOENT, fmt::format("the owner of ${} is gone", r.name));
      maps[codegen::ref_map_name(i, k)] = owner->record_map();
    }
  }
  return maps;
}

// Compiles one program holding `triggers`: every check but the kernel's
// own (the verifier's, at load).
Expected<EventPrograms::Built> EventPrograms::build(EventState& ev, const std::vector<Trigger*>& triggers,
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
  // set_event_pid asks the tasks the record its entry is handed names (an
  // eprobe's: its attached event's).
  const catalog::EventId decided = on ? *on : catalog::EventId{ev.system, ev.event};
  if (auto format = catalog_.event(decided.system, decided.name)) unit->entry.pids = pipeline::pid_check(**format);
  b.unit = pipeline::compile_event(*unit);
  auto object = object_of(b.unit.source);
  if (!object) return unexpected(std::move(object).error());
  b.object = std::move(*object);
  // The kernel would refuse it with a bare E2BIG, after loading began.
  auto used = runtime::object_maps(b.object);
  if (!used) return unexpected(std::move(used).error());
  if (used->most_per_program > kMaxMapsPerProgram)
    return fail(ErrorKind::Busy, ENOSPC,
                fmt::format("{} triggers on {}:{} would use {} maps (at most {} per program)",
                            unit->numbered().size() + enables.size(), ev.system, ev.event, used->most_per_program,
                            kMaxMapsPerProgram));
  b.maps_used = used->most_per_program;
  auto maps = unit_maps(*unit, triggers, used->referenced);
  if (!maps) return unexpected(std::move(maps).error());
  b.maps = std::move(*maps);
  return b;
}

Expected<std::string> EventPrograms::object_of(const std::string& source) const {
  if (!outside_) return compiler_.compile(source);
  // A preview stops at its first unit, whatever is at hand.
  if (!(stopping_ && outside_->preview)) {
    if (auto it = outside_->compiled.find(source); it != outside_->compiled.end()) return it->second;
    if (!stopping_) return compiler_.compile(source);
    if (auto hit = compiler_.cached(source)) return std::move(*hit);
  }
  outside_->needed = source;
  return fail(ErrorKind::NotCompiled, EAGAIN, "the unit is compiled outside the engine's lock first");
}

}  // namespace histd::deploy
