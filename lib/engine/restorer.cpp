// SPDX-License-Identifier: GPL-2.0-only
// Restorer (histd/restorer.h): the saved state re-applied at start, and
// what did not restore tried again.
#include "histd/restorer.h"

#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"

namespace histd::engine {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

Restorer::Restorer(Parts parts)
    : mu_(parts.lock),
      commands_(parts.commands),
      state_(parts.state),
      errors_(parts.errors),
      deployer_(parts.deployer) {}

std::map<uint64_t, Restorer::SavedEntry> Restorer::apply_entries(std::vector<SavedEntry> entries,
                                                                 std::vector<std::string>& problems) {
  std::map<uint64_t, SavedEntry> made;
  for (SavedEntry& e : entries) {
    std::lock_guard lock(mu_);
    const BatchCommand own(deployer_);
    uint64_t uid = 0;
    CommandResult r = commands_.apply_saved(e, &uid);
    if (r && uid != 0) made.emplace(uid, std::move(e));
    if (r) continue;
    e.reason = first_line(r.error().message());
    const ErrorKind kind = r.error().error.kind;
    // finish_command logged the others.
    if (r.error().diagnostic == std::nullopt && (kind == ErrorKind::NotFound || kind == ErrorKind::Busy))
      errors_.add(e.kind == SavedEntry::Kind::Trigger ? "hist:" + e.event : e.event,
                  Diagnostic{ErrorCode::NotRestored, Span{0, 0}, e.command, e.reason});
    problems.push_back(fmt::format("{}: {}: {}", e.event, e.command, e.reason));
    state_.not_restored().push_back(std::move(e));
  }
  return made;
}

void Restorer::end_batch(std::map<uint64_t, SavedEntry>& made, std::vector<std::string>& problems) {
  for (deploy::Deployer::Refused& refused : deployer_.end_batch()) {
    auto it = made.find(refused.uid);
    if (it == made.end()) {  // not expected: a restore's triggers come from saved entries
      commands_.take_back(refused);
      continue;
    }
    SavedEntry e = std::move(it->second);
    made.erase(it);
    (void)commands_.take_back(refused, false);
    e.reason = first_line(refused.error.context);
    errors_.add("hist:" + e.event, Diagnostic{ErrorCode::NotRestored, Span{0, 0}, e.command, e.reason});
    problems.push_back(fmt::format("{}: {}: {}", e.event, e.command, e.reason));
    state_.not_restored().push_back(std::move(e));
  }
}

std::vector<std::string> Restorer::restore() {
  std::vector<std::string> problems;
  if (state_.path().empty()) return problems;
  std::optional<Diagnostic> unreadable;
  std::vector<SavedEntry> entries = state_.read(problems, unreadable);
  {
    std::lock_guard lock(mu_);
    if (unreadable) errors_.add("histd", *unreadable);
    state_.set_restoring(true);
    deployer_.set_restoring(true);
    // Its triggers were accepted before: each program compiled once, at the
    // end (apply_entries makes them the batch's own).
    deployer_.begin_batch();
  }
  std::map<uint64_t, SavedEntry> made = apply_entries(std::move(entries), problems);
  std::lock_guard lock(mu_);
  end_batch(made, problems);
  deployer_.install_restored(problems);
  state_.set_restoring(false);
  deployer_.set_restoring(false);
  // A state directory that cannot be written keeps the file as it was (the
  // daemon warned at start); the next change is refused until it can.
  (void)state_.save();
  if (state_.may_sweep_pins()) {
    deployer_.sweep_pins();
  } else if (const std::vector<SavedEntry>& kept = state_.not_restored(); !kept.empty()) {
    problems.push_back(
        fmt::format("{} saved entr{} not restored: kept in {} with every pinned table, retried at the "
                    "next start or by `histctl restore`",
                    kept.size(), kept.size() == 1 ? "y" : "ies", state_.path().string()));
  }
  return problems;
}

std::vector<NotRestored> Restorer::retry() {
  std::lock_guard lock(mu_);
  std::vector<SavedEntry>& kept = state_.not_restored();
  for (size_t i = 0; i < kept.size();) {
    // Its own save (after it applies) must not list it a second time.
    kept[i].applying = true;
    const SavedEntry e = kept[i];
    CommandResult r = commands_.apply_saved(e);
    if (r) {
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    kept[i].applying = false;
    kept[i].reason = first_line(r.error().message());
    ++i;
  }
  (void)state_.save();
  if (state_.may_sweep_pins()) deployer_.sweep_pins();
  std::vector<NotRestored> out;
  for (const SavedEntry& e : kept) out.push_back(NotRestored{e.event, e.command, e.reason});
  return out;
}

RestoreReport Restorer::report() {
  std::lock_guard lock(mu_);
  RestoreReport r;
  for (const SavedEntry& e : state_.not_restored()) r.not_restored.push_back(NotRestored{e.event, e.command, e.reason});
  r.state_file_problem = state_.problem();
  return r;
}

}  // namespace histd::engine
