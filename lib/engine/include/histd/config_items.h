// SPDX-License-Identifier: GPL-2.0-only
// The engine's side of the configuration directory (config::reconcile):
// which triggers and synthetic events are the configuration's
// (ConfigItem), and adding, removing and updating them, a reload's
// commands in one batch of the deployer's. Each goes through the same
// command paths as a user's write (Commands), so errors, limits, error_log
// and the state file behave alike; the mark is recorded before the change
// is saved, so a crash never leaves a declared trigger looking like a
// user's. The Engine owns it and hands it out (Engine::config()).
// Thread-safe: each call takes the engine's lock.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "histd/deploy.h"
#include "histd/registry.h"
#include "histd/result.h"

namespace histd::engine {

class Commands;
class ErrorLog;
class StateFile;

// A trigger or synthetic event histd applied from its configuration
// directory (config::reconcile): histd's to change and remove when the
// files change. Everything else (the tree, histctl) is the users', and a
// reload never touches it. Which is which is saved in the state file.
struct ConfigItem {
  enum class Kind { Synthetic, Trigger };
  Kind kind = Kind::Trigger;
  std::string event;  // "system:event"; for a synthetic event, its name
  // A trigger's command as declared; a synthetic event's definition as
  // synthetic_events lists it (synth::list_line).
  std::string text;
  bool restored = true;  // false: saved but not restored (NotRestored)
  // A hist trigger's identity, as triggers match (plan::encode of its
  // plan::TriggerKey): one for every spelling of it. "" when not known.
  std::string identity;
};

// A trigger the kernel refused at a batch's end, taken back out of the
// registry (error_log says why).
struct BatchRefusal {
  ConfigItem item;
  CommandFailure failure;
};

class ConfigItems {
 public:
  // The Engine's lock and parts, each outliving this.
  struct Parts {
    std::mutex& lock;
    Commands& commands;
    StateFile& state;
    ErrorLog& errors;
    const registry::Registry& registry;
    deploy::Deployer& deployer;
  };
  explicit ConfigItems(Parts parts);

  // What histd holds from the configuration: synthetic events by name, then
  // hist triggers in creation order (owners before the users of their
  // variables), then enable/disable_hist; saved ones that did not restore last.
  std::vector<ConfigItem> items();
  // items()'s identity of `item` if applied now (planned with the catalog
  // and histd's variables); "" if not a hist trigger or it cannot be planned now.
  std::string identity(const ConfigItem& item);
  // Applies a declared trigger (item.text on item.event) or synthetic event
  // definition and marks it as the configuration's, in the same save. One
  // saved but not restored is applied from its saved entry (its pause state,
  // and the pinned counts it kept), as `histctl restore` would. Errors go
  // to error_log under `location` ("file:line") instead of the event's name.
  CommandResult add(const ConfigItem& item, const std::string& location);
  // Removes what items() listed as `item` (a saved one that did not restore
  // is dropped from the state file); ENOENT when it is no longer there or
  // is not the configuration's.
  CommandResult remove(const ConfigItem& item);
  // The same trigger (identity, size) declared in other words: keeps it and
  // its counts, records `text`, pauses or continues it.
  CommandResult update(const ConfigItem& item, const std::string& text, bool paused);
  // Many commands (a reload's), each event's program loaded once: between
  // begin_batch() and end_batch() the deployer checks what a command
  // changes but may leave the kernel's load to the end (see
  // deploy::Deployer::begin_batch), and the compile of the batch's own
  // commands (add, update, remove: set_batch_command there); a command
  // made meanwhile, a user's too, counts from then. end_batch() takes back
  // from the registry what the kernel refused then (error_log says why),
  // and returns those the configuration declared.
  void begin_batch();
  std::vector<BatchRefusal> end_batch();

 private:
  using SavedEntry = registry::SavedEntry;
  // add() for an item saved but not restored: the saved entry applied
  // again (and dropped once it applies); nullopt when there is none.
  std::optional<CommandResult> retry(const ConfigItem& item);

  std::mutex& mu_;
  Commands& commands_;
  StateFile& state_;
  ErrorLog& errors_;
  const registry::Registry& registry_;
  deploy::Deployer& deployer_;
};

}  // namespace histd::engine
