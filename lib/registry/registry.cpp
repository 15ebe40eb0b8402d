// SPDX-License-Identifier: GPL-2.0-only
// The registry's queries: what planning, listing and the decisions in
// apply.cpp read from it.
#include "histd/registry.h"

#include <fmt/format.h>

#include <functional>
#include <variant>

namespace histd::registry {

Registry::Registry(const catalog::Catalog& catalog, Options options) : catalog_(&catalog), options_(options) {}

const EventTriggers* Registry::triggers(const catalog::EventId& event) const {
  auto it = events_.find(event);
  return it == events_.end() ? nullptr : &it->second;
}

std::pair<const catalog::EventId*, const HistTrigger*> Registry::find(uint64_t uid) const {
  for (const auto& [id, ev] : events_)
    for (const HistTrigger& t : ev.hist)
      if (t.uid == uid) return {&id, &t};
  return {nullptr, nullptr};
}

plan::PlanContext Registry::planning() const {
  plan::PlanContext reg;
  reg.catalog = catalog_;
  reg.tables = {options_.possible_cpus, options_.limits.percpu_table_limit};
  for (const auto& [id, ev] : events_)
    for (const HistTrigger& t : ev.hist)
      for (const plan::Variable& v : t.plan.vars) reg.vars.push_back(plan::registered_var(t.plan, v, t.uid));
  for (const auto& [name, s] : synths_) reg.synths.push_back(s.def);
  return reg;
}

const plan::HistPlan* Registry::named_layout(const std::string& name) const {
  auto it = named_.find(name);
  return it == named_.end() ? nullptr : &it->second;
}

std::optional<std::string> Registry::referenced_by(const std::set<uint64_t>& going) const {
  for (const auto& [id, ev] : events_)
    for (const HistTrigger& t : ev.hist) {
      if (going.count(t.uid)) continue;
      for (const plan::VarRef& r : t.plan.refs)
        if (!r.self && going.count(r.owner)) return fmt::format("{}:{}", id.system, id.name);
    }
  return std::nullopt;
}

bool Registry::synth_in_use(const std::string& name) const {
  // An eprobe attached to it holds it, as the kernel's holds the event.
  for (const auto& [id, e] : eprobes_)
    if (e.def.def.attached_system == catalog::kSynthSystem && e.def.def.attached_event == name) return true;
  // An enabled event is busy too, as trace_event_dyn_busy() makes it.
  if (auto s = synths_.find(name); s != synths_.end() && s->second.enabled) return true;
  for (const auto& [id, ev] : events_) {
    if (id.system == catalog::kSynthSystem && id.name == name && !ev.hist.empty()) return true;
    for (const HistTrigger& t : ev.hist)
      for (const plan::ActionPlan& a : t.plan.actions)
        if (a.synth == name) return true;
  }
  return false;
}

bool Registry::synth_reaches(const std::string& from, const std::string& to) const {
  std::set<std::string> seen;
  std::function<bool(const std::string&)> walk = [&](const std::string& s) {
    if (!seen.insert(s).second) return false;
    auto it = events_.find(catalog::EventId{std::string(catalog::kSynthSystem), s});
    if (it == events_.end()) return false;
    for (const HistTrigger& t : it->second.hist)
      for (const plan::ActionPlan& a : t.plan.actions)
        if (!a.synth.empty() && (a.synth == to || walk(a.synth))) return true;
    return false;
  };
  return walk(from);
}

namespace {

bool is_dynamic(const catalog::Catalog& catalog, const catalog::EventId& event) {
  for (const catalog::EventId& d : catalog.dynamic_events())
    if (d == event) return true;
  return false;
}

}  // namespace

Expected<std::shared_ptr<const catalog::EventFormat>> Registry::format(const catalog::EventId& event) const {
  if (event.system == catalog::kSynthSystem) {
    if (auto s = synths_.find(event.name); s != synths_.end())
      return std::make_shared<const catalog::EventFormat>(synth::format_of(s->second.def, s->second.id));
  }
  if (auto k = eprobes_.find(event); k != eprobes_.end())
    return std::make_shared<const catalog::EventFormat>(probe::format_of(k->second.def.def, k->second.id));
  return catalog_->event(event.system, event.name);
}

bool Registry::exists(const catalog::EventId& event) const {
  if (event.system == catalog::kSynthSystem && synths_.count(event.name)) return true;
  if (eprobes_.count(event)) return true;
  // A synthetic event or eprobe the catalog holds for a registry that no
  // longer has it (the engine's catalog follows the registry it committed)
  // is gone.
  if (!catalog_->contains(event.system, event.name)) return false;
  return !is_dynamic(*catalog_, event);
}

catalog::EventSource Registry::source(const catalog::EventId& event) const {
  if (event.system == catalog::kSynthSystem && synths_.count(event.name)) return catalog::EventSource::Synthetic;
  if (eprobes_.count(event)) return catalog::EventSource::Probe;
  return catalog_->source(event.system, event.name);
}

size_t Registry::trigger_count() const {
  size_t n = 0;
  for (const auto& [id, ev] : events_) n += ev.hist.size() + ev.controls.size();
  return n;
}

uint64_t Registry::map_memory() const {
  // A named table is one table for all its triggers: counted once.
  std::set<std::string> named;
  uint64_t bytes = 0;
  for (const auto& [id, ev] : events_)
    for (const HistTrigger& t : ev.hist) {
      const plan::MapMemory m = plan::map_memory(t.plan, options_.possible_cpus);
      bytes += m.vars;
      if (!t.plan.name || named.insert(*t.plan.name).second) bytes += m.table + m.stats + m.hot;
    }
  return bytes;
}

std::string Registry::identity(const HistTrigger& t) { return plan::encode(plan::trigger_key(t.plan)); }

std::string Registry::identity_of(const catalog::EventId& event, std::string_view text) const {
  auto parsed = parse::parse_trigger(text);
  const auto* cmd = parsed ? std::get_if<parse::HistCommand>(&*parsed) : nullptr;
  if (!cmd || cmd->remove) return {};
  // Planned as a write would plan it (without its side effects: no field
  // variables are made, nothing is compared with the event's triggers).
  auto f = format(event);
  if (!f) return {};
  auto planned = plan::plan_hist(*cmd, **f, planning());
  return planned ? plan::encode(plan::trigger_key(*planned)) : std::string{};
}

Result<TriggerWrite, Diagnostic> TriggerWrite::parse(catalog::EventId event, std::string_view text, size_t max_bytes,
                                                     std::string config) {
  auto parsed = parse::parse_trigger(text, max_bytes);
  if (!parsed) return unexpected(std::move(parsed).error());
  return TriggerWrite{std::move(event), std::move(*parsed), std::move(config)};
}

const std::string& TriggerWrite::logged() const {
  return std::visit([](const auto& c) -> const std::string& { return c.command; }, command);
}

Result<SynthWrite, Diagnostic> SynthWrite::parse(std::string_view line, bool config) {
  auto parsed = synth::parse_synth_command(line);
  if (!parsed) return unexpected(std::move(parsed).error());
  return SynthWrite{std::move(*parsed), config};
}

}  // namespace histd::registry
