// SPDX-License-Identifier: GPL-2.0-only
// Restoring the saved state: the state file's entries re-applied at start,
// as one batch of the deployer's (each event's programs compiled and
// loaded once); what did not restore stays in the state file as it was
// saved with its pins kept (nothing saved is lost because it failed to load
// once), is listed with its reason, and is tried again at the next start or
// on request (histctl restore). The Engine owns it and hands it to the
// front ends (Engine::restorer()). Thread-safe: each call takes the
// engine's lock (restore() for each entry, so that a command made meanwhile
// waits for one entry, not for the whole restore).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "histd/deploy.h"
#include "histd/registry.h"

namespace histd::engine {

class Commands;
class ErrorLog;
class StateFile;

// A saved trigger, synthetic event or enable state that did not restore.
// It stays in the state file as it was saved, the pinned tables are kept,
// and it is tried again at the next start and by Restorer::retry().
struct NotRestored {
  std::string event;    // "system:event"; "synthetic_events" for a definition
  std::string command;  // the saved line ("enable" for a synthetic event's enable state)
  std::string reason;
};

// What restoring the state found, for `histctl status`.
struct RestoreReport {
  std::vector<NotRestored> not_restored;
  // A state file that could not be read, and where it was kept ("" if none).
  std::string state_file_problem;
};

class Restorer {
 public:
  // The Engine's lock and parts, each outliving this.
  struct Parts {
    std::mutex& lock;
    Commands& commands;
    StateFile& state;
    ErrorLog& errors;
    deploy::Deployer& deployer;
  };
  explicit Restorer(Parts parts);

  // Re-applies the triggers saved in the state file. What no longer applies
  // (an event gone, a command the catalog refuses, a limit, the compiler)
  // is returned for the log, listed by report(), kept in the state file and
  // its pins kept. A state file that cannot be read is kept aside
  // (triggers.json.corrupt-<time>).
  std::vector<std::string> restore();
  // Tries the saved entries that did not restore again (histctl restore);
  // returns those that still fail.
  std::vector<NotRestored> retry();
  RestoreReport report();

 private:
  using SavedEntry = registry::SavedEntry;
  // Applies `entries` in order; those that fail go to
  // StateFile::not_restored(). The hist triggers made, by uid: the
  // deployer's batch may still refuse them.
  std::map<uint64_t, SavedEntry> apply_entries(std::vector<SavedEntry> entries, std::vector<std::string>& problems);
  // Ends the deployer's batch: what its kernel refused goes back out of the
  // registry, and its saved entry (made: the uid's) to those not restored.
  void end_batch(std::map<uint64_t, SavedEntry>& made, std::vector<std::string>& problems);

  std::mutex& mu_;
  Commands& commands_;
  StateFile& state_;
  ErrorLog& errors_;
  deploy::Deployer& deployer_;
};

}  // namespace histd::engine
