// SPDX-License-Identifier: GPL-2.0-only
// The deployer's shared kernel objects: the control array and its slots
// (one per trigger, enable/disable_hist, recorded event and synthetic
// event: a pause flag and a count BPF reads and flips), and the triggers'
// tables with their pins in bpffs (a restart re-adopts a pinned table of
// the same trigger and layout and keeps counting). The Deployer owns it
// and decides what each slot and table is for. Not thread-safe: the
// deployer calls it under the engine's lock.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "deploy/state.h"
#include "hist_shared.h"
#include "histd/kernel.h"

namespace histd::deploy {

class KernelObjects {
 public:
  // `kernel`: the deployer's, outliving this; `control`: the control array
  // (HISTD_CONTROL_SLOTS words); `pin_dir`: Options::pin_dir (empty:
  // nothing is pinned).
  KernelObjects(Kernel& kernel, Fd control, std::filesystem::path pin_dir);

  // ---- control slots ----
  int control_fd() const { return control_.get(); }
  Expected<uint32_t> allocate_slot();
  Status set_paused(uint32_t slot, bool paused);
  bool is_paused(uint32_t slot) const;
  // A slot's whole word: its pause flag and the firings it has left.
  Status write_control(uint32_t slot, const histd_trigger_control& c);
  // Nothing when the kernel cannot say.
  std::optional<histd_trigger_control> read_control(uint32_t slot) const;
  // The slot reads as paused with no firings left; it is free again at
  // once, or in a batch only at end_batch().
  void release_slot(uint32_t slot);
  // Between the two, a released slot stays taken: the program that ran
  // through it may still be installed (Deployer::end_batch loads its
  // successor), and a trigger made meanwhile must not count through it.
  void begin_batch() { batching_ = true; }
  // From end_batch() on a released slot is free at once; free_released()
  // frees those released before, once their programs are gone.
  void end_batch() { batching_ = false; }
  void free_released();

  // ---- tables and pins ----
  // A table for `plan`: a named table's existing one, one adopted from the
  // pins a previous histd left, or a new one (pinned when pinning).
  Expected<std::shared_ptr<TableState>> acquire_table(const plan::HistPlan& plan);
  // A table's pins go (its last trigger went).
  void unpin_table(const TableState& t);
  std::string event_pin_base(const EventState& ev, const std::optional<catalog::SyscallEvent>& syscall, bool btf) const;
  // Removes pins nothing in `events` uses any more (left by a histd that
  // died with triggers the state file no longer names).
  void sweep_pins(const std::map<catalog::EventId, std::unique_ptr<EventState>>& events);
  // At shutdown: named tables are found no more.
  void forget_tables() { named_tables_.clear(); }

 private:
  std::string pin_base(const plan::HistPlan& plan) const;
  Status pin_table(TableState& t);
  bool adopt_pinned(TableState& t);
  Expected<Fd> create_hot_slots(const plan::HistPlan& p);

  Kernel& kernel_;
  Fd control_;  // the shared per-trigger control array
  std::vector<bool> slot_used_;
  bool batching_ = false;                    // begin_batch() .. end_batch()
  std::vector<uint32_t> released_in_batch_;  // control slots free again after end_batch()
  const std::filesystem::path pin_dir_;
  std::map<std::string, std::weak_ptr<TableState>> named_tables_;
};

}  // namespace histd::deploy
