// SPDX-License-Identifier: GPL-2.0-only
// The engine's reads: each copies what it needs under the lock and returns
// data (histd/readout.h); the front ends render it. Which triggers exist
// comes from the registry, what only the kernel knows (pause flags, enable
// counts, maps, tables) from the deployer.
#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"
#include "histd/engine.h"

namespace histd::engine {

std::vector<TriggerInfo> Engine::event_triggers(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  std::vector<TriggerInfo> out;
  const catalog::EventId id{system, event};
  const registry::EventTriggers* triggers = registry_.triggers(id);
  if (!triggers) return out;
  for (const registry::ControlTrigger& e : triggers->controls) out.push_back(control_info(id, e));
  for (const registry::HistTrigger& t : triggers->hist) out.push_back(trigger_line(id, t));
  return out;
}

Expected<readout::EventHist> Engine::hist(const std::string& system, const std::string& event) {
  readout::EventHist out{system, event, {}, {}};
  deploy::TableReads reads;
  {
    std::lock_guard lock(mu_);
    if (!catalog_.contains(system, event))
      return fail(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event));
    const catalog::EventId id{system, event};
    auto copied = deployer_->reads().table_reads(id);
    if (!copied) return unexpected(std::move(copied).error());
    reads = std::move(*copied);
    const auto& notes = commands_->notes();
    if (auto n = notes.find(id); n != notes.end()) out.last_error = n->second.last_error;
  }
  auto tables = deploy::read_tables(std::move(reads));
  if (!tables) return unexpected(std::move(tables).error());
  out.tables = std::move(*tables);
  return out;
}

uint64_t Engine::version(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  const catalog::EventId id{system, event};
  const auto& notes = commands_->notes();
  auto n = notes.find(id);
  return (n == notes.end() ? 0 : n->second.generation) + deployer_->reads().activity(id);
}

readout::EventDebug Engine::hist_debug(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  return deployer_->reads().debug(catalog::EventId{system, event});
}

std::vector<readout::ErrorLogEntry> Engine::error_log() {
  std::lock_guard lock(mu_);
  return errors_->entries();
}

void Engine::clear_error_log() {
  std::lock_guard lock(mu_);
  errors_->clear();
}

TriggerInfo Engine::trigger_line(const catalog::EventId& ev, const registry::HistTrigger& t) const {
  TriggerInfo info;
  info.system = ev.system;
  info.event = ev.name;
  info.line = t.plan.trigger_text();
  info.state = deployer_->reads().paused(t.uid) ? readout::TriggerState::Paused : readout::TriggerState::Active;
  info.config = !t.config.empty();
  return info;
}

TriggerInfo Engine::control_info(const catalog::EventId& ev, const registry::ControlTrigger& e) const {
  TriggerInfo info;
  info.system = ev.system;
  info.event = ev.name;
  info.line = deployer_->reads().control_line(ev, e.cmd);
  info.hist = false;
  info.config = !e.config.empty();
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
  for (const auto& [id, triggers] : registry_.events())
    for (const registry::HistTrigger& t : triggers.hist) {
      TriggerInfo info = trigger_line(id, t);
      if (with_maps) deployer_->reads().add_maps(t.uid, info);
      out.push_back(std::move(info));
    }
  for (const auto& [id, triggers] : registry_.events())
    for (const registry::ControlTrigger& e : triggers.controls) out.push_back(control_info(id, e));
  for (const SavedEntry& e : state_->not_restored()) {
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

ActivationTimes Engine::activation_times() {
  std::lock_guard lock(mu_);
  return commands_->activation_times();
}

}  // namespace histd::engine
