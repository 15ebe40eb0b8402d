// SPDX-License-Identifier: GPL-2.0-only
// Restoring the saved state, and what did not restore: such an entry stays
// in the state file as it was saved and its pins are kept (nothing saved is
// lost because it failed to load once), it is listed with its reason, and
// it is tried again at the next start or on request (histctl restore).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/commands.h"
#include "engine/error_log.h"
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

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

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

std::map<uint64_t, Engine::SavedEntry> Engine::apply_saved_entries(std::vector<SavedEntry> entries,
                                                                   std::vector<std::string>& problems) {
  std::map<uint64_t, SavedEntry> made;
  for (SavedEntry& e : entries) {
    std::lock_guard lock(mu_);
    const BatchCommand own(*deployer_);
    uint64_t uid = 0;
    CommandResult r = commands_->apply_saved(e, &uid);
    if (r && uid != 0) made.emplace(uid, std::move(e));
    if (r) continue;
    e.reason = first_line(r.error().message());
    const ErrorKind kind = r.error().error.kind;
    // finish_command logged the others.
    if (r.error().diagnostic == std::nullopt && (kind == ErrorKind::NotFound || kind == ErrorKind::Busy))
      errors_->add(e.kind == SavedEntry::Kind::Trigger ? "hist:" + e.event : e.event,
                   Diagnostic{ErrorCode::NotRestored, Span{0, 0}, e.command, e.reason});
    problems.push_back(fmt::format("{}: {}: {}", e.event, e.command, e.reason));
    state_->not_restored().push_back(std::move(e));
  }
  return made;
}

void Engine::end_restore_batch(std::map<uint64_t, SavedEntry>& made, std::vector<std::string>& problems) {
  for (deploy::Deployer::Refused& refused : deployer_->end_batch()) {
    auto it = made.find(refused.uid);
    if (it == made.end()) {  // not expected: a restore's triggers come from saved entries
      commands_->take_back(refused);
      continue;
    }
    SavedEntry e = std::move(it->second);
    made.erase(it);
    (void)commands_->take_back(refused, false);
    e.reason = first_line(refused.error.context);
    errors_->add("hist:" + e.event, Diagnostic{ErrorCode::NotRestored, Span{0, 0}, e.command, e.reason});
    problems.push_back(fmt::format("{}: {}: {}", e.event, e.command, e.reason));
    state_->not_restored().push_back(std::move(e));
  }
}

std::vector<std::string> Engine::restore() {
  std::vector<std::string> problems;
  if (options_.state_file.empty()) return problems;
  std::optional<Diagnostic> unreadable;
  std::vector<SavedEntry> entries = state_->read(problems, unreadable);
  {
    std::lock_guard lock(mu_);
    if (unreadable) errors_->add("histd", *unreadable);
    state_->set_restoring(true);
    deployer_->set_restoring(true);
    // Its triggers were accepted before: each program compiled once, at the
    // end (apply_saved_entries makes them the batch's own).
    deployer_->begin_batch();
  }
  std::map<uint64_t, SavedEntry> made = apply_saved_entries(std::move(entries), problems);
  std::lock_guard lock(mu_);
  end_restore_batch(made, problems);
  deployer_->install_restored(problems);
  state_->set_restoring(false);
  deployer_->set_restoring(false);
  // A state directory that cannot be written keeps the file as it was (the
  // daemon warned at start); the next change is refused until it can.
  (void)state_->save();
  if (state_->may_sweep_pins()) {
    deployer_->sweep_pins();
  } else if (const std::vector<SavedEntry>& kept = state_->not_restored(); !kept.empty()) {
    problems.push_back(
        fmt::format("{} saved entr{} not restored: kept in {} with every pinned table, retried at the "
                    "next start or by `histctl restore`",
                    kept.size(), kept.size() == 1 ? "y" : "ies", options_.state_file.string()));
  }
  return problems;
}

std::vector<NotRestored> Engine::retry_restore() {
  std::lock_guard lock(mu_);
  std::vector<SavedEntry>& kept = state_->not_restored();
  for (size_t i = 0; i < kept.size();) {
    // Its own save (after it applies) must not list it a second time.
    kept[i].applying = true;
    const SavedEntry e = kept[i];
    CommandResult r = commands_->apply_saved(e);
    if (r) {
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    kept[i].applying = false;
    kept[i].reason = first_line(r.error().message());
    ++i;
  }
  (void)state_->save();
  if (state_->may_sweep_pins()) deployer_->sweep_pins();
  std::vector<NotRestored> out;
  for (const SavedEntry& e : kept) out.push_back(NotRestored{e.event, e.command, e.reason});
  return out;
}

RestoreReport Engine::restore_report() {
  std::lock_guard lock(mu_);
  RestoreReport r;
  for (const SavedEntry& e : state_->not_restored())
    r.not_restored.push_back(NotRestored{e.event, e.command, e.reason});
  r.state_file_problem = state_->problem();
  return r;
}

CommandResult Engine::remove_listed(const std::string& system, const std::string& event, std::string_view line) {
  std::lock_guard lock(mu_);
  return commands_->remove_listed(system, event, line);
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
