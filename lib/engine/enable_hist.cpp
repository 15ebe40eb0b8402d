// The engine's enable_hist / disable_hist triggers: they live on one event
// and flip the pause flags of another event's hist triggers from BPF.
#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "engine/engine_state.h"
#include "histd/engine.h"

namespace histd::engine {

std::vector<Engine::EnableTrigger*> Engine::enables_of(EventState& ev) {
  std::vector<EnableTrigger*> out;
  for (auto& e : ev.enables) out.push_back(e.get());
  return out;
}

std::vector<Engine::Trigger*> Engine::triggers_of(EventState& ev) {
  std::vector<Trigger*> out;
  for (auto& t : ev.triggers) out.push_back(t.get());
  return out;
}

std::string Engine::enable_line(const EnableTrigger& e) const {
  std::string s = fmt::format("{}:{}:{}", e.cmd.enable ? "enable_hist" : "disable_hist", e.cmd.system, e.cmd.event);
  histd_trigger_control c{};
  bpf_map_lookup_elem(control_.get(), &e.slot, &c);
  s += c.count == HISTD_UNLIMITED ? std::string(":unlimited") : fmt::format(":count={}", c.count);
  if (e.cmd.filter) s += " if " + e.cmd.filter->text;
  return s;
}

void Engine::refresh_enablers_of(const EventState& target) {
  for (auto& [id, ev] : events_) {
    const bool targets = std::any_of(ev->enables.begin(), ev->enables.end(), [&](const auto& e) {
      return e->cmd.system == target.system && e->cmd.event == target.event;
    });
    if (!targets) continue;
    auto st = rebuild(*ev, triggers_of(*ev), enables_of(*ev));
    if (!st) {
      readout::ErrorLogEntry note;
      note.note = fmt::format("histd: could not update {}:{} after {}:{} changed: {}\n", id.system, id.name,
                              target.system, target.event, st.error().context);
      error_log_.push_back(std::move(note));
    }
  }
}

CommandResult Engine::deploy_enable(EventState& ev, const registry::EnableTrigger& decided) {
  auto slot = allocate_slot();
  if (!slot) return unexpected(CommandFailure{std::nullopt, std::move(slot).error()});
  auto e = std::make_unique<EnableTrigger>();
  e->cmd = decided.cmd;
  e->filter = decided.filter;
  e->slot = *slot;
  histd_trigger_control c{0, e->cmd.count ? static_cast<uint32_t>(std::min<uint64_t>(*e->cmd.count, HISTD_UNLIMITED - 1))
                                          : HISTD_UNLIMITED};
  bpf_map_update_elem(control_.get(), &e->slot, &c, BPF_ANY);
  std::vector<EnableTrigger*> all{e.get()};
  for (auto& other : ev.enables) all.push_back(other.get());
  auto st = rebuild(ev, triggers_of(ev), all);
  if (!st) {
    release_slot(e->slot);
    return rebuild_failure(ev, e->cmd.command, std::move(st).error());
  }
  ev.enables.insert(ev.enables.begin(), std::move(e));
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) {
    // The events generating this one run its enables in their programs.
    auto generators = rebuild_generators(ev.event);
    if (!generators) {
      std::unique_ptr<EnableTrigger> added = std::move(ev.enables.front());
      ev.enables.erase(ev.enables.begin());
      (void)rebuild(ev, triggers_of(ev), enables_of(ev));
      (void)rebuild_generators(ev.event);
      release_slot(added->slot);
      return rebuild_failure(ev, added->cmd.command, std::move(generators).error());
    }
    (void)refresh_synth(ev.event);
  }
  return Unit{};
}

CommandResult Engine::remove_enable(EventState& ev, EnableTrigger* going) {
  std::vector<EnableTrigger*> rest;
  for (auto& e : ev.enables)
    if (e.get() != going) rest.push_back(e.get());
  auto st = rebuild(ev, triggers_of(ev), rest);
  if (!st) return unexpected(CommandFailure{std::nullopt, std::move(st).error()});
  release_slot(going->slot);
  std::erase_if(ev.enables, [&](const auto& e) { return e.get() == going; });
  after_synth_removal(ev);
  return Unit{};
}

}  // namespace histd::engine
