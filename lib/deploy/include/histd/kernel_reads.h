// SPDX-License-Identifier: GPL-2.0-only
// What only the kernel knows of the deployed triggers, read as data for the
// engine's reads and saves: pause flags, the counts control words have
// left, map ids and memory, Missed counts, an event's debug facts and
// generated C, whether its records are traced, and its tables. The
// Deployer owns it (Deployer::reads()) and changes what it reads; this
// only reads, through references to the Deployer's events, kernel objects
// and programs. A table is read in two steps: what the engine's lock
// guards is copied under it (table_reads: the plan, fds of its own), and
// the maps are read after it (read_tables), so that a command (which takes
// the lock) never waits for a big table's read and rendering. Not
// thread-safe: the engine reads under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "histd/catalog.h"
#include "histd/parse.h"
#include "histd/plan.h"
#include "histd/readout.h"
#include "histd/result.h"

namespace histd::deploy {

// Events an attached event's programs did not run for (the kernel's BPF
// recursion guard: another BPF program was running on that CPU), since
// histd attached it.
struct EventMissed {
  std::string system;
  std::string event;
  uint64_t missed = 0;
};

// An event's enable file: whether its records go to the trace buffer now,
// and whether an enable_event/disable_event trigger turns it on and off
// (the kernel's soft mode, shown with a '*').
struct EventEnableState {
  bool on = false;
  bool soft = false;
};

// One event's tables as they were when the engine's lock was held, each
// with fds of its own (a trigger removed meanwhile closes its own): read
// after the lock by read_tables(), so that a command never waits for a big
// table's read.
class TableReads {
 public:
  struct Read;
  TableReads();
  TableReads(TableReads&&) noexcept;
  TableReads& operator=(TableReads&&) noexcept;
  ~TableReads();

 private:
  friend class KernelReads;
  friend Expected<std::vector<readout::HistTable>> read_tables(TableReads reads);
  std::vector<Read> reads_;
};
Expected<std::vector<readout::HistTable>> read_tables(TableReads reads);

struct EventState;
class EventPrograms;
class Kernel;
class KernelObjects;

class KernelReads {
 public:
  using Events = std::map<catalog::EventId, std::unique_ptr<EventState>>;
  // The Deployer's kernel (histd/kernel.h: its map ids and lookups),
  // events, kernel objects and programs, each outliving this; per-CPU maps
  // hold a value per possible CPU.
  KernelReads(const Kernel& kernel, const Events& events, const KernelObjects& objects, const EventPrograms& programs,
              uint32_t possible_cpus);

  // Its control word's pause flag (BPF's enable_hist flips it too).
  bool paused(uint64_t uid) const;
  // An enable_hist/disable_hist as its event's trigger file lists it, with
  // the count its control word has left.
  std::string control_line(const catalog::EventId& event, const parse::ControlCommand& cmd) const;
  // Trigger `uid`'s maps: memory by the formula, the named table it
  // shares, the kernel's map ids.
  void add_maps(uint64_t uid, readout::TriggerInfo& info) const;
  // Where trigger `uid`'s Missed count starts on its event's counter (saved
  // with it; Deployer::restore_missed_base sets a restored one's).
  uint64_t missed_base(uint64_t uid) const;
  Expected<TableReads> table_reads(const catalog::EventId& event) const;
  readout::EventDebug debug(const catalog::EventId& event) const;
  // Changes whenever the event's tables may have (hits, drops, a trigger
  // paused or continued from BPF): hits and drops summed, paused flags as
  // bits above what those reach.
  uint64_t activity(const catalog::EventId& event) const;
  std::vector<EventMissed> missed() const;
  EventEnableState enable_state(const catalog::EventId& event) const;
  // The generated BPF C of the event's program as loaded ("" without one).
  std::string source(const catalog::EventId& event) const;
  // The plan of each of its hist triggers (plan::describe), in the order
  // they run, a blank line between them.
  std::string plans(const catalog::EventId& event) const;
  // One trigger's plan as plans() prints it: a command's before it is
  // deployed (engine::Engine::preview).
  static std::string plan_of(const plan::HistPlan& plan);

 private:
  const Kernel& kernel_;
  const Events& events_;
  const KernelObjects& objects_;
  const EventPrograms& programs_;
  const uint32_t possible_cpus_;
};

}  // namespace histd::deploy
