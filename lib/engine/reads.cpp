// SPDX-License-Identifier: GPL-2.0-only
// Reads (histd/engine_reads.h): each copies what it needs under the lock
// and returns data (histd/readout.h); the front ends render it. Which
// triggers exist comes from the registry, what only the kernel knows
// (pause flags, enable counts, maps, tables) from the deployer.
#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"
#include "histd/engine.h"

namespace histd::engine {

using catalog::kSynthSystem;

Reads::Reads(Parts parts)
    : mu_(parts.lock),
      catalog_(parts.catalog),
      options_(parts.options),
      registry_(parts.registry),
      deployer_(parts.deployer),
      commands_(parts.commands),
      state_(parts.state),
      errors_(parts.errors) {}

std::vector<TriggerInfo> Reads::event_triggers(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  std::vector<TriggerInfo> out;
  const catalog::EventId id{system, event};
  const registry::EventTriggers* triggers = registry_.triggers(id);
  if (!triggers) return out;
  for (const registry::ControlTrigger& e : triggers->controls) out.push_back(control_info(id, e));
  for (const registry::HistTrigger& t : triggers->hist) out.push_back(trigger_line(id, t));
  return out;
}

Expected<readout::EventHist> Reads::hist(const std::string& system, const std::string& event) {
  readout::EventHist out{system, event, {}, {}};
  deploy::TableReads reads;
  {
    std::lock_guard lock(mu_);
    if (!catalog_.contains(system, event))
      return fail(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event));
    const catalog::EventId id{system, event};
    auto copied = deployer_.reads().table_reads(id);
    if (!copied) return unexpected(std::move(copied).error());
    reads = std::move(*copied);
    const auto& notes = commands_.notes();
    if (auto n = notes.find(id); n != notes.end()) out.last_error = n->second.last_error;
  }
  auto tables = deploy::read_tables(std::move(reads));
  if (!tables) return unexpected(std::move(tables).error());
  out.tables = std::move(*tables);
  return out;
}

uint64_t Reads::version(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  const catalog::EventId id{system, event};
  const auto& notes = commands_.notes();
  auto n = notes.find(id);
  return (n == notes.end() ? 0 : n->second.generation) + deployer_.reads().activity(id);
}

readout::EventDebug Reads::hist_debug(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  return deployer_.reads().debug(catalog::EventId{system, event});
}

std::vector<readout::ErrorLogEntry> Reads::error_log() {
  std::lock_guard lock(mu_);
  return errors_.entries();
}

TriggerInfo Reads::trigger_line(const catalog::EventId& ev, const registry::HistTrigger& t) const {
  TriggerInfo info;
  info.system = ev.system;
  info.event = ev.name;
  info.line = t.plan.trigger_text();
  info.state = deployer_.reads().paused(t.uid) ? readout::TriggerState::Paused : readout::TriggerState::Active;
  info.config = !t.config.empty();
  return info;
}

TriggerInfo Reads::control_info(const catalog::EventId& ev, const registry::ControlTrigger& e) const {
  TriggerInfo info;
  info.system = ev.system;
  info.event = ev.name;
  info.line = deployer_.reads().control_line(ev, e.cmd);
  info.hist = false;
  info.config = !e.config.empty();
  return info;
}

std::vector<TriggerInfo> Reads::trigger_lines() {
  std::lock_guard lock(mu_);
  return listed_triggers(false);
}

std::vector<TriggerInfo> Reads::trigger_info() {
  std::lock_guard lock(mu_);
  return listed_triggers(true);
}

std::vector<TriggerInfo> Reads::listed_triggers(bool with_maps) const {
  std::vector<TriggerInfo> out;
  for (const auto& [id, triggers] : registry_.events())
    for (const registry::HistTrigger& t : triggers.hist) {
      TriggerInfo info = trigger_line(id, t);
      if (with_maps) deployer_.reads().add_maps(t.uid, info);
      out.push_back(std::move(info));
    }
  for (const auto& [id, triggers] : registry_.events())
    for (const registry::ControlTrigger& e : triggers.controls) out.push_back(control_info(id, e));
  for (const registry::SavedEntry& e : state_.not_restored()) {
    if (e.kind != registry::SavedEntry::Kind::Trigger) continue;
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

ActivationTimes Reads::activation_times() {
  std::lock_guard lock(mu_);
  return commands_.activation_times();
}

Usage Reads::usage() {
  std::lock_guard lock(mu_);
  Usage u;
  u.triggers = registry_.trigger_count();
  u.max_triggers = options_.limits.max_triggers;
  u.synthetic_events = registry_.synthetics().size();
  u.max_synthetic_events = options_.limits.max_synthetic_events;
  u.map_memory = registry_.map_memory();
  u.max_map_memory = options_.limits.max_map_memory;
  u.map_memory_all_trees = options_.map_budget ? options_.map_budget->held() : u.map_memory;
  u.trace_buffer_size = options_.deploy.trace_buffer_size;
  u.possible_cpus = registry_.options().possible_cpus;
  return u;
}

Reads::EventSource Reads::event_source(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  const catalog::EventId id{system, event};
  return EventSource{deployer_.reads().source(id), deployer_.reads().plans(id)};
}

std::vector<EventMissed> Reads::missed() {
  std::lock_guard lock(mu_);
  return deployer_.reads().missed();
}

std::vector<synth::SynthDefinition> Reads::synthetic_events() {
  std::lock_guard lock(mu_);
  std::vector<synth::SynthDefinition> out;
  for (const auto& [name, s] : registry_.synthetics()) out.push_back(s.def);
  return out;
}

std::vector<std::string> Reads::synthetic_names() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, s] : registry_.synthetics()) out.push_back(name);
  return out;
}

bool Reads::enabled(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  if (system != kSynthSystem) return registry_.enabled_events().count(catalog::EventId{system, event}) > 0;
  auto s = registry_.synthetics().find(event);
  return s != registry_.synthetics().end() && s->second.enabled;
}

deploy::EventEnableState Reads::enable_state(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  if (system == kSynthSystem) {
    auto s = registry_.synthetics().find(event);
    return deploy::EventEnableState{s != registry_.synthetics().end() && s->second.enabled, false};
  }
  return deployer_.reads().enable_state(catalog::EventId{system, event});
}

std::optional<std::string> Reads::filter(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto f = registry_.filters().find(catalog::EventId{system, event});
  if (f == registry_.filters().end()) return std::nullopt;
  return f->second.text;
}

std::vector<catalog::EventId> Reads::enabled_events() {
  std::lock_guard lock(mu_);
  std::vector<catalog::EventId> out(registry_.enabled_events().begin(), registry_.enabled_events().end());
  for (const auto& [name, s] : registry_.synthetics())
    if (s.enabled) out.push_back(catalog::EventId{std::string(kSynthSystem), name});
  return out;
}

std::string Reads::probe_events(const std::string& file) {
  std::lock_guard lock(mu_);
  std::string kernel = deployer_.probe_files().probe_events(file);
  if (file != "dynamic_events") return kernel;
  for (const auto& [id, e] : registry_.eprobes()) kernel += probe::list_line(e.def) + "\n";
  return kernel;
}

}  // namespace histd::engine
