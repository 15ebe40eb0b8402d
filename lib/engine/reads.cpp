// The engine's reads other than the tables (read_tables.cpp): trigger lines,
// hist_debug, the error log. Each copies what it needs under the lock and
// returns data (histd/readout.h); the front ends render it.
#include <bpf/bpf.h>

#include "engine/deployer.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

uint32_t map_id(int fd) {
  if (fd < 0) return 0;
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  return bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

}  // namespace

std::vector<TriggerInfo> Engine::event_triggers(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  std::vector<TriggerInfo> out;
  auto it = deployer_->events().find(catalog::EventId{system, event});
  if (it == deployer_->events().end()) return out;
  for (const auto& e : it->second->enables) out.push_back(enable_info(*it->second, *e));
  for (const auto& t : it->second->triggers) out.push_back(trigger_line(*it->second, *t));
  return out;
}

readout::EventDebug Engine::hist_debug(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  readout::EventDebug d;
  d.system = system;
  d.event = event;
  auto it = deployer_->events().find(catalog::EventId{system, event});
  if (it == deployer_->events().end()) return d;
  const EventState& ev = *it->second;
  d.possible_cpus = possible_cpus_;
  d.attached = ev.attachment.has_value();
  if (ev.syscall) {
    d.raw_syscall_nr = ev.syscall->nr;
    d.raw_syscall_exit = ev.syscall->exit;
  }
  d.maps_used = ev.maps_used;
  d.max_maps = kMaxMapsPerProgram;
  d.event_missed = deployer_->event_missed(ev);
  for (const auto& t : ev.triggers) {
    readout::DebugTable dt;
    dt.plan = t->plan;
    dt.paused = deployer_->is_paused(t->slot);
    dt.table_map_id = map_id(t->table->map.get());
    dt.memory = plan::map_memory(t->plan, possible_cpus_);
    if (t->plan.name && t->table.use_count() > 1) dt.shared_table = *t->plan.name;
    dt.missed = ev.attachment ? deployer_->trigger_missed(ev, *t) : 0;
    d.tables.push_back(std::move(dt));
  }
  return d;
}

std::vector<readout::ErrorLogEntry> Engine::error_log() {
  std::lock_guard lock(mu_);
  return {error_log_.begin(), error_log_.end()};
}

void Engine::clear_error_log() {
  std::lock_guard lock(mu_);
  error_log_.clear();
}

TriggerInfo Engine::trigger_line(const EventState& ev, const Trigger& t) const {
  TriggerInfo info;
  info.system = ev.system;
  info.event = ev.event;
  info.line = t.plan.trigger_text();
  info.state = deployer_->is_paused(t.slot) ? readout::TriggerState::Paused : readout::TriggerState::Active;
  info.config = !config_of(ev, t).empty();
  return info;
}

TriggerInfo Engine::enable_info(const EventState& ev, const EnableTrigger& e) const {
  TriggerInfo info;
  info.system = ev.system;
  info.event = ev.event;
  info.line = deployer_->enable_line(e);
  info.hist = false;
  info.config = !config_of(ev, e).empty();
  return info;
}

std::vector<TriggerInfo> Engine::trigger_lines() {
  std::lock_guard lock(mu_);
  return listed_triggers(false);
}

std::vector<TriggerInfo> Engine::trigger_info() {
  std::lock_guard lock(mu_);
  return listed_triggers(true);
}

std::vector<TriggerInfo> Engine::listed_triggers(bool with_maps) const {
  std::vector<TriggerInfo> out;
  for (const auto& [id, ev] : deployer_->events())
    for (const auto& t : ev->triggers) {
      TriggerInfo info = trigger_line(*ev, *t);
      if (with_maps) {
        info.memory = plan::map_memory(t->plan, possible_cpus_);
        if (t->plan.name && t->table.use_count() > 1) info.shared_table = *t->plan.name;
        info.table_map_id = map_id(t->table->map.get());
        info.stats_map_id = map_id(t->table->stats.get());
        info.vars_map_id = t->vars ? map_id(t->vars.get()) : 0;
        info.hot_map_id = t->table->hot ? map_id(t->table->hot.get()) : 0;
      }
      out.push_back(std::move(info));
    }
  for (const auto& [id, ev] : deployer_->events())
    for (const auto& e : ev->enables) out.push_back(enable_info(*ev, *e));
  for (const SavedEntry& e : not_restored_) {
    if (e.kind != SavedEntry::Kind::Trigger) continue;
    TriggerInfo info;
    const size_t colon = e.event.find(':');
    info.system = e.event.substr(0, colon);
    info.event = colon == std::string::npos ? std::string() : e.event.substr(colon + 1);
    info.line = e.command;
    info.hist = !e.command.starts_with("enable_hist") && !e.command.starts_with("disable_hist");
    info.state = readout::TriggerState::NotRestored;
    info.not_restored = e.reason;
    info.config = !e.config.empty();
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace histd::engine
