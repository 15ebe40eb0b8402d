// SPDX-License-Identifier: GPL-2.0-only
// The kernel side of the registry's synthetic events: each one's two
// control slots (one paused while nothing wants its records, one while they
// do not go to the trace buffer), its format in the catalog, and the
// programs of the events that generate it, which run its triggers (down a
// chain of synthetic events too) and are rebuilt when those change. The
// Deployer owns it and the state it works on, and decides when; this
// defines, removes and enables synthetic events and rebuilds their
// generators through the Deployer's EventPrograms. Not thread-safe: the
// deployer calls it under the engine's lock.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "deploy/state.h"

namespace histd::deploy {

class EventPrograms;
class KernelObjects;

class SyntheticEvents {
 public:
  // The Deployer's state and services, each outliving this.
  struct State {
    catalog::Catalog& catalog;  // a definition adds its event's format
    Events& events;             // a removal drops its event's state
    std::map<std::string, std::unique_ptr<SynthState>>& synths;
    KernelObjects& objects;
    EventPrograms& programs;
  };
  explicit SyntheticEvents(State state);

  CommandResult define(const registry::Synthetic& def);
  void remove(const std::string& name);
  // Its records to the trace buffer, or no longer.
  CommandResult enable(const std::string& name, bool on);
  // Its control slots brought up to date: its records are wanted while it
  // is enabled, has triggers or is recorded through an eprobe on it.
  Status refresh(const std::string& name);
  // Rebuilds every event whose programs run synthetic event `name`'s
  // triggers (directly or down a chain), after those changed.
  Status rebuild_generators(const std::string& name);
  // After a trigger or enable of synthetic event `ev` went: its control word
  // and the programs of the events generating it follow.
  void after_removal(EventState& ev);
  // After an eprobe on a synthetic event starts or stops being recorded,
  // that event's slots and generators brought up to date.
  Status refresh_eprobe_generators(const EventState& ev);
  // The definition of the enabled synthetic event whose records have
  // common_type `id` (TraceRing::Notices); null for any other.
  const synth::SynthDefinition* traced(uint32_t id) const;

 private:
  // Whether the deployed programs of synthetic event `from` generate `to`,
  // directly or down a chain.
  bool reaches(const std::string& from, const std::string& to) const;

  catalog::Catalog& catalog_;
  Events& events_;
  std::map<std::string, std::unique_ptr<SynthState>>& synths_;
  KernelObjects& objects_;
  EventPrograms& programs_;
};

}  // namespace histd::deploy
