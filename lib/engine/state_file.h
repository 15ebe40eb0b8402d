// SPDX-License-Identifier: GPL-2.0-only
// The state file: what outlives histd with the tables pinned in bpffs. It
// holds the registry's synthetic events, triggers, eprobes, enable states
// and filters with what only the kernel knows of them, set_event_pid's
// list among it (registry::saved_text),
// and the saved entries that did not restore, kept as they were saved. A
// change first reserves room for the state it will leave (reserve: the file
// system's blocks, taken before anything changes), so that a full or
// read-only state directory refuses the change instead of losing it at the
// next start; save() then writes into the reservation, or without one a new
// file. A file that cannot be read is kept aside, never lost. The Engine
// owns it. Not thread-safe: the engine calls it under its lock (and reads
// the file at start, before anything else runs).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "histd/diagnostic.h"
#include "histd/event_pids.h"
#include "histd/fd.h"
#include "histd/kernel_reads.h"
#include "histd/registry.h"
#include "histd/result.h"

namespace histd::engine {

// This boot's id (/proc/sys/kernel/random/boot_id; empty when it cannot
// be read): saved pids are restored in the boot they are of only.
std::string boot_id();
// set_event_pid as the state file keeps it (lib/engine/event_pids.cpp):
// none while no list is in force and forks are not followed.
std::optional<registry::SavedPids> saved_pids(const deploy::EventPids& pids);

class StateFile {
 public:
  using SavedEntry = registry::SavedEntry;
  // `path`: EngineOptions::state_file (empty: nothing is saved); `pin_dir`:
  // deploy::Options::pin_dir. The registry, the kernel's reads and the pid
  // list outlive it.
  StateFile(std::filesystem::path path, std::filesystem::path pin_dir, const registry::Registry& registry,
            const deploy::KernelReads& kernel, const deploy::EventPids& pids);

  const std::filesystem::path& path() const { return path_; }
  // While restoring nothing is reserved or saved: the restore saves once,
  // at its end.
  void set_restoring(bool on) { restoring_ = on; }
  Status reserve(size_t command_size);
  void drop_room();
  Status save();

  // The file's entries in the order to apply them. One that cannot be read
  // is kept aside (triggers.json.corrupt-<time>): `problems` and problem()
  // say so, and `unreadable` is the error_log entry to make of it.
  std::vector<SavedEntry> read(std::vector<std::string>& problems, std::optional<Diagnostic>& unreadable);
  const std::string& problem() const { return problem_; }
  // Whether pins nobody uses may go: never while a saved entry is not
  // restored or a corrupt state file is kept aside.
  bool may_sweep_pins() const;

  // The saved entries that did not restore, in the file's order.
  std::vector<SavedEntry>& not_restored() { return not_restored_; }
  const std::vector<SavedEntry>& not_restored() const { return not_restored_; }

 private:
  std::string text() const;
  std::string tmp_path() const;
  Diagnostic keep_corrupt(const std::string& why, std::vector<std::string>& problems);

  const std::filesystem::path path_;
  const std::filesystem::path pin_dir_;
  const registry::Registry& registry_;
  const deploy::KernelReads& kernel_;
  const deploy::EventPids& pids_;
  Fd room_;  // the reserved next state file (see reserve)
  bool restoring_ = false;
  std::string problem_;
  std::vector<SavedEntry> not_restored_;
};

}  // namespace histd::engine
