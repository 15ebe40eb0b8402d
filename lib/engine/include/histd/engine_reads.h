// SPDX-License-Identifier: GPL-2.0-only
// The engine's reads: what the front ends show, as data they render
// (render::trigger_file, render::hist_text, ...) as the reader asks and may
// see. Which triggers and synthetic events exist comes from the registry,
// what only the kernel knows (pause flags, enable counts, maps, tables,
// missed counts) from the deployer's KernelReads, a hist file's last error
// and generation from the engine's Commands. The Engine owns it and hands
// it out (Engine::reads()). Thread-safe: each call takes the engine's lock
// and copies what it needs under it (hist() reads the maps after it).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "histd/deploy.h"
#include "histd/registry.h"

namespace histd::engine {

struct EngineOptions;
class Commands;
class ErrorLog;
class StateFile;

using deploy::EventMissed;

// One trigger, with its state (readout::TriggerInfo).
using TriggerInfo = readout::TriggerInfo;

// What is in use against the limits.
struct Usage {
  size_t triggers = 0;
  size_t max_triggers = 0;
  size_t synthetic_events = 0;
  size_t max_synthetic_events = 0;
  uint64_t map_memory = 0;  // shared tables once
  uint64_t max_map_memory = 0;
  uint64_t map_memory_all_trees = 0;  // with the instances that share max_map_memory
  size_t trace_buffer_size = 0;
  uint32_t possible_cpus = 0;
};

// How long the trigger changes that loaded programs took to take effect
// (compile, load, attach: Commands::run's deploy), as counts per bucket.
struct ActivationTimes {
  static constexpr std::array<double, 10> kBounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};  // seconds
  std::array<uint64_t, kBounds.size() + 1> counts{};  // bucket i up to kBounds[i]; the last past them all
  double sum_seconds = 0;
  void add(std::chrono::duration<double> took);
};

class Reads {
 public:
  // The Engine's lock, options and parts, each outliving this.
  struct Parts {
    std::mutex& lock;
    const catalog::Catalog& catalog;
    const EngineOptions& options;
    const registry::Registry& registry;
    deploy::Deployer& deployer;
    const Commands& commands;
    const StateFile& state;
    const ErrorLog& errors;
  };
  explicit Reads(Parts parts);

  // ---- triggers and their tables ----
  // The event's trigger file: its enable_hist/disable_hist, then its hist
  // triggers (no maps: see trigger_info()).
  std::vector<TriggerInfo> event_triggers(const std::string& system, const std::string& event);
  // The event's tables (ENOENT for an event the catalog does not have). The
  // lock is taken only to copy what is needed: the maps are read outside it,
  // and the caller renders after.
  Expected<readout::EventHist> hist(const std::string& system, const std::string& event);
  // Changes whenever the event's tables may have changed (hits, drops,
  // commands, a trigger paused or continued by enable_hist/disable_hist):
  // what poll() on a hist file waits for.
  uint64_t version(const std::string& system, const std::string& event);
  readout::EventDebug hist_debug(const std::string& system, const std::string& event);
  // Every trigger: the hist triggers in event order, then the
  // enable_hist/disable_hist, then the saved triggers that did not restore
  // (without their maps: see trigger_info()).
  std::vector<TriggerInfo> trigger_lines();
  // The same triggers with their map memory and map ids.
  std::vector<TriggerInfo> trigger_info();
  // The generated BPF C of an event as it is loaded now ("" without triggers),
  // and its hist triggers' plans (KernelReads::plans), read together.
  struct EventSource {
    std::string source;
    std::string plans;
  };
  EventSource event_source(const std::string& system, const std::string& event);

  // ---- histd's state ----
  std::vector<readout::ErrorLogEntry> error_log();
  Usage usage();
  // Every attached event with the events its programs missed.
  std::vector<EventMissed> missed();
  ActivationTimes activation_times();

  // ---- synthetic events, enable and filter files, probe events ----
  // The definitions, by name.
  std::vector<synth::SynthDefinition> synthetic_events();
  std::vector<std::string> synthetic_names();
  // Whether the event's enable file was set (a synthetic event's records
  // are traced; a kernel event's go to the trace buffer).
  bool enabled(const std::string& system, const std::string& event);
  // The events enabled (set_event lists them): kernel events, then synthetic.
  std::vector<catalog::EventId> enabled_events();
  // An event's enable file as it reads now: enable_event/disable_event
  // triggers turn a kernel event's recording on and off from BPF.
  deploy::EventEnableState enable_state(const std::string& system, const std::string& event);
  // The event's filter file (Engine::set_filter): its filter's text,
  // nullopt when it has none.
  std::optional<std::string> filter(const std::string& system, const std::string& event);
  // kprobe_events, uprobe_events or dynamic_events (`file`): the kernel's
  // lines, and in dynamic_events histd's own eprobes after them.
  std::string probe_events(const std::string& file);

 private:
  // A trigger as the listings show it (without its maps).
  TriggerInfo trigger_line(const catalog::EventId& ev, const registry::HistTrigger& t) const;
  TriggerInfo control_info(const catalog::EventId& ev, const registry::ControlTrigger& e) const;
  // trigger_lines(), and with `with_maps` trigger_info(), under the lock.
  std::vector<TriggerInfo> listed_triggers(bool with_maps) const;

  std::mutex& mu_;
  const catalog::Catalog& catalog_;
  const EngineOptions& options_;
  const registry::Registry& registry_;
  deploy::Deployer& deployer_;  // its reads(); probe_files() is not const
  const Commands& commands_;
  const StateFile& state_;
  const ErrorLog& errors_;
};

}  // namespace histd::engine
