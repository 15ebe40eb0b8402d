// SPDX-License-Identifier: GPL-2.0-only
// Saved entries as commands (Commands::apply_saved: a restored one, a
// retried one, a declaration that did not restore), and the removal of a
// trigger by the line a listing shows for it (Commands::remove_listed), a
// saved one that did not restore included.
#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/state_file.h"
#include "histd/engine.h"
#include "histd/text.h"

namespace histd::engine {

namespace {

// A listed line without what the listing adds after it.
std::string_view without_listing_suffix(std::string_view line) {
  line = trim(line);
  if (!line.ends_with("]")) return line;
  const size_t open = line.rfind(" [");
  if (open == std::string_view::npos) return line;
  const std::string_view tag = line.substr(open + 2, line.size() - open - 3);
  if (tag == "active" || tag == "paused" || tag.starts_with("not restored")) return trim(line.substr(0, open));
  return line;
}

}  // namespace

CommandResult Commands::apply_saved(const SavedEntry& e, uint64_t* made) {
  auto bad = [&](const std::string& why) {
    return system_failure(Error{ErrorKind::Invalid, EINVAL, why + ": " + e.raw});
  };
  switch (e.kind) {
    case SavedEntry::Kind::Synthetic:
      if (e.command.empty()) return bad("not a synthetic event definition");
      return e.config.empty() ? write_synthetic(e.command) : write_config_synthetic(e.command);
    case SavedEntry::Kind::Enabled:
    case SavedEntry::Kind::EventEnabled: {
      const size_t colon = e.event.find(':');
      const bool kernel = e.kind == SavedEntry::Kind::EventEnabled;
      if (e.event.empty() || (kernel && (colon == std::string::npos || colon == 0 || colon + 1 == e.event.size())))
        return bad(kernel ? "not an event" : "not a synthetic event name");
      const catalog::EventId id = kernel ? catalog::EventId{e.event.substr(0, colon), e.event.substr(colon + 1)}
                                         : catalog::EventId{std::string(catalog::kSynthSystem), e.event};
      if (!registry_.exists(id)) return system_failure(Error{ErrorKind::NotFound, ENOENT, "no event " + e.event});
      if (auto room = state_.reserve(0); !room) return system_failure(std::move(room).error());
      return finish_command(fmt::format("{}:{}/enable", id.system, id.name), "1", nullptr, enable(id, true));
    }
    case SavedEntry::Kind::Eprobe:
      if (e.command.empty()) return bad("not an eprobe definition");
      return write_own_probe(e.command, registry::ProbeWrite::parse(e.command));
    case SavedEntry::Kind::EventFilter: {
      const size_t colon = e.event.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == e.event.size() || e.command.empty())
        return bad("not an event filter");
      if (auto room = state_.reserve(0); !room) return system_failure(std::move(room).error());
      return filter(catalog::EventId{e.event.substr(0, colon), e.event.substr(colon + 1)}, e.command);
    }
    case SavedEntry::Kind::EventPids:
      if (!e.pids) return bad("not set_event_pid's list");
      return restore_pids(*e.pids);
    case SavedEntry::Kind::Trigger:
      break;
  }
  const size_t colon = e.event.find(':');
  if (colon == std::string::npos || e.command.empty()) return bad("not a saved trigger");
  const std::string system = e.event.substr(0, colon), name = e.event.substr(colon + 1);
  const catalog::EventId id{system, name};
  const uint64_t next_uid = registry_.next_uid();
  CommandResult r =
      write_trigger(system, name, e.command, registry::kMaxPrintedCommandBytes, e.config.empty() ? nullptr : &e.config);
  if (!r) return r;
  // The trigger the entry made (not one it only paused or cleared): the
  // newest of its event.
  const registry::EventTriggers* triggers = registry_.triggers(id);
  const registry::HistTrigger* added =
      triggers && !triggers->hist.empty() && triggers->hist.back().uid >= next_uid ? &triggers->hist.back() : nullptr;
  if (added) deployer_.restore_missed_base(added->uid, e.missed_base);
  if (added && made) *made = added->uid;
  if (!e.paused || !added) return r;
  CommandResult paused = run(registry::TriggerMark{added->uid, true, e.config}, &id, "hist:" + e.event, e.command);
  if (!paused) return paused;
  (void)state_.save();
  return r;
}

CommandResult Engine::remove_listed(const std::string& system, const std::string& event, std::string_view line) {
  return compiled_outside([&] { return commands_->remove_listed(system, event, line); });
}

CommandResult Commands::remove_listed(const std::string& system, const std::string& event, std::string_view line) {
  std::string_view text = without_listing_suffix(line);
  if (text.starts_with("!")) text = trim(text.substr(1));
  const std::string id = system + ":" + event;
  // A saved trigger that did not restore is removed from the state file.
  std::vector<SavedEntry>& kept = state_.not_restored();
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if (it->kind != SavedEntry::Kind::Trigger || it->event != id || it->command != text) continue;
    if (auto room = state_.reserve(0); !room) return system_failure(std::move(room).error());
    kept.erase(it);
    return finish_command("hist:" + id, text, nullptr, Unit{});
  }
  auto count = [&] {
    const registry::EventTriggers* triggers = registry_.triggers(catalog::EventId{system, event});
    return triggers ? triggers->hist.size() + triggers->controls.size() : size_t{0};
  };
  const size_t before = count();
  CommandResult r = write_trigger(system, event, "!" + std::string(text), registry::kMaxPrintedCommandBytes);
  if (r && count() == before)
    return unexpected(CommandFailure{Diagnostic{ErrorCode::TriggerNotFound, Span{0, 0}, std::string(text), {}},
                                     Error{ErrorKind::NotFound, ENOENT, {}}});
  return r;
}

}  // namespace histd::engine
