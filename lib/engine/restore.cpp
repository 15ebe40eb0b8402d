// Restoring the saved state, and what did not restore: such an entry stays
// in the state file as it was saved and its pins are kept (nothing saved is
// lost because it failed to load once), it is listed with its reason, and
// it is tried again at the next start or on request (histctl restore).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/deployer.h"
#include "histd/engine.h"
#include "histd/parse.h"
#include "histd/text.h"

namespace histd::engine {

namespace {

using nlohmann::json;

constexpr const char* kCorruptInfix = ".corrupt-";

std::string utc_stamp() {
  const time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// A member of a saved entry, or "" when absent or of another type (a
// hand-edited file must not throw).
std::string string_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

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

std::vector<Engine::SavedEntry> Engine::read_state(std::vector<std::string>& problems) {
  std::vector<SavedEntry> entries;
  // Never through a symlink: root would read (and later replace) whatever
  // file it names. What is not a plain file is set aside like a corrupt one.
  Fd fd(open(options_.state_file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd && errno == ENOENT) return entries;  // the first start
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    keep_corrupt_state(!fd && errno == ELOOP ? "a symbolic link (not followed)"
                       : !fd                 ? std::strerror(errno)
                                             : "not a regular file",
                       problems);
    return entries;
  }
  std::string text;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      keep_corrupt_state(std::strerror(errno), problems);
      return entries;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("triggers") || !doc["triggers"].is_array()) {
    keep_corrupt_state("not a histd state file", problems);
    return entries;
  }
  if (auto v = doc.find("version"); v != doc.end() && *v != 1) {
    keep_corrupt_state(fmt::format("state file version {}, this histd reads version 1", v->dump()), problems);
    return entries;
  }
  // The configuration's own synthetic events, by name (absent from files
  // older histds wrote: everything there is the users').
  std::set<std::string> config_synthetic;
  if (auto c = doc.find("config_synthetic_events"); c != doc.end() && c->is_array())
    for (const json& n : *c)
      if (n.is_string()) config_synthetic.insert(n.get<std::string>());
  auto add = [&](SavedEntry::Kind kind, const json& raw, std::string event, std::string command) {
    SavedEntry e;
    e.kind = kind;
    e.raw = raw.dump();
    e.event = std::move(event);
    e.command = std::move(command);
    if (kind == SavedEntry::Kind::Synthetic) {
      const std::string name = e.command.substr(0, e.command.find_first_of(" \t"));
      if (config_synthetic.count(name)) e.config = name;
    }
    if (kind == SavedEntry::Kind::Trigger && raw.is_object()) {
      e.config = string_at(raw, "config");
      auto paused = raw.find("paused");
      e.paused = paused != raw.end() && paused->is_boolean() && paused->get<bool>();
      auto base = raw.find("missed_base");
      if (base != raw.end() && base->is_number_unsigned()) e.missed_base = base->get<uint64_t>();
    }
    entries.push_back(std::move(e));
  };
  if (auto s = doc.find("synthetic_events"); s != doc.end() && s->is_array())
    for (const json& d : *s) add(SavedEntry::Kind::Synthetic, d, "synthetic_events", d.is_string() ? d.get<std::string>() : "");
  for (const json& t : doc["triggers"]) add(SavedEntry::Kind::Trigger, t, string_at(t, "event"), string_at(t, "command"));
  if (auto s = doc.find("enabled_synthetic_events"); s != doc.end() && s->is_array())
    for (const json& n : *s) add(SavedEntry::Kind::Enabled, n, n.is_string() ? n.get<std::string>() : "", "enable");
  return entries;
}

// The file is renamed, never deleted or overwritten: the operator can read
// it, mend it and put it back. The previous instance's programs (its pinned
// links) are detached: nothing would ever read what they count. Its pinned
// tables are kept, for a mended file to adopt, until the copy is removed
// (may_sweep_pins).
void Engine::keep_corrupt_state(const std::string& why, std::vector<std::string>& problems) {
  const std::string file = options_.state_file.string();
  const std::string aside = file + kCorruptInfix + utc_stamp();
  std::string where = "kept as " + aside;
  if (rename(file.c_str(), aside.c_str()) != 0) where = fmt::format("could not be moved aside ({})", strerror(errno));
  size_t links = 0, tables = 0;
  std::error_code ec;
  if (!options_.pin_dir.empty())
    for (const auto& entry : std::filesystem::directory_iterator(options_.pin_dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("event-")) {
        std::filesystem::remove(entry.path(), ec);  // unpinning a link detaches its program
        links += name.ends_with("_link");
      } else if (name.ends_with("_table")) {
        ++tables;
      }
    }
  state_file_problem_ = fmt::format("{}: {}; {}. The previous histd's {} attached event(s) were detached; its {} "
                                    "pinned table(s) are kept until that file is removed",
                                    file, why, where, links, tables);
  std::lock_guard lock(mu_);
  log_error("histd", Diagnostic{ErrorCode::StateFileUnreadable, Span{0, 0}, file, why + "; " + where});
  problems.push_back(state_file_problem_);
}

CommandResult Engine::apply_saved(const SavedEntry& e) {
  auto bad = [&](const std::string& why) {
    return system_failure(Error{ErrorKind::Invalid, EINVAL, why + ": " + e.raw});
  };
  switch (e.kind) {
    case SavedEntry::Kind::Synthetic:
      if (e.command.empty()) return bad("not a synthetic event definition");
      return e.config.empty() ? write_synthetic_locked(e.command) : write_config_synthetic_locked(e.command);
    case SavedEntry::Kind::Enabled: {
      if (e.event.empty()) return bad("not a synthetic event name");
      if (auto room = reserve_state(0); !room) return system_failure(std::move(room).error());
      return finish_command(fmt::format("{}:{}/enable", kSynthSystem, e.event), "1", nullptr,
                            set_enabled_locked(e.event, true));
    }
    case SavedEntry::Kind::Trigger:
      break;
  }
  const size_t colon = e.event.find(':');
  if (colon == std::string::npos || e.command.empty()) return bad("not a saved trigger");
  const std::string system = e.event.substr(0, colon), name = e.event.substr(colon + 1);
  auto it = deployer_->events().find(catalog::EventId{system, name});
  const size_t before = it == deployer_->events().end() ? 0 : it->second->triggers.size();
  CommandResult r = write_trigger_locked(system, name, e.command, parse::kMaxPrintedCommandBytes,
                                         e.config.empty() ? nullptr : &e.config);
  if (!r) return r;
  it = deployer_->events().find(catalog::EventId{system, name});
  const bool added = it != deployer_->events().end() && it->second->triggers.size() > before;
  // A saved Missed base counts on the dispatcher a previous histd pinned,
  // adopted by now; a dispatcher attached afresh (its counter below the
  // base) counts the trigger's misses from its start.
  if (added)
    it->second->triggers.back()->missed_base = std::min(e.missed_base, deployer_->event_missed(*it->second));
  if (!e.paused) return r;
  if (added) {
    registry_.set_saved(it->second->triggers.back()->uid, true, e.config);
    auto st = deployer_->set_paused(it->second->triggers.back()->slot, true);
    if (!st) return system_failure(std::move(st).error());
    (void)save_state();
  }
  return r;
}

void Engine::apply_saved_entries(std::vector<SavedEntry> entries, std::vector<std::string>& problems) {
  for (SavedEntry& e : entries) {
    std::lock_guard lock(mu_);
    CommandResult r = apply_saved(e);
    if (r) continue;
    e.reason = first_line(r.error().message());
    const ErrorKind kind = r.error().error.kind;
    // finish_command logged the others.
    if (r.error().diagnostic == std::nullopt && (kind == ErrorKind::NotFound || kind == ErrorKind::Busy))
      log_error(e.kind == SavedEntry::Kind::Trigger ? "hist:" + e.event : e.event,
                Diagnostic{ErrorCode::NotRestored, Span{0, 0}, e.command, e.reason});
    problems.push_back(fmt::format("{}: {}: {}", e.event, e.command, e.reason));
    not_restored_.push_back(std::move(e));
  }
}

bool Engine::may_sweep_pins() const {
  if (!not_restored_.empty()) return false;
  const std::string prefix = options_.state_file.filename().string() + kCorruptInfix;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.state_file.parent_path(), ec))
    if (entry.path().filename().string().starts_with(prefix)) return false;
  return true;
}

std::vector<std::string> Engine::restore() {
  std::vector<std::string> problems;
  if (options_.state_file.empty()) return problems;
  std::vector<SavedEntry> entries = read_state(problems);
  {
    std::lock_guard lock(mu_);
    restoring_ = true;
    deployer_->set_restoring(true);
  }
  apply_saved_entries(std::move(entries), problems);
  std::lock_guard lock(mu_);
  deployer_->install_restored(problems);
  restoring_ = false;
  deployer_->set_restoring(false);
  // A state directory that cannot be written keeps the file as it was (the
  // daemon warned at start); the next change is refused until it can.
  (void)save_state();
  if (may_sweep_pins()) {
    deployer_->sweep_pins();
  } else if (!not_restored_.empty()) {
    problems.push_back(fmt::format("{} saved entr{} not restored: kept in {} with every pinned table, retried at the "
                                   "next start or by `histctl restore`",
                                   not_restored_.size(), not_restored_.size() == 1 ? "y" : "ies",
                                   options_.state_file.string()));
  }
  return problems;
}

std::vector<NotRestored> Engine::retry_restore() {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < not_restored_.size();) {
    // Its own save (after it applies) must not list it a second time.
    not_restored_[i].applying = true;
    const SavedEntry e = not_restored_[i];
    CommandResult r = apply_saved(e);
    if (r) {
      not_restored_.erase(not_restored_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    not_restored_[i].applying = false;
    not_restored_[i].reason = first_line(r.error().message());
    ++i;
  }
  (void)save_state();
  if (may_sweep_pins()) deployer_->sweep_pins();
  std::vector<NotRestored> out;
  for (const SavedEntry& e : not_restored_) out.push_back(NotRestored{e.event, e.command, e.reason});
  return out;
}

RestoreReport Engine::restore_report() {
  std::lock_guard lock(mu_);
  RestoreReport r;
  for (const SavedEntry& e : not_restored_) r.not_restored.push_back(NotRestored{e.event, e.command, e.reason});
  r.state_file_problem = state_file_problem_;
  return r;
}

CommandResult Engine::remove_listed(const std::string& system, const std::string& event, std::string_view line) {
  std::lock_guard lock(mu_);
  std::string_view text = without_listing_suffix(line);
  if (text.starts_with("!")) text = trim(text.substr(1));
  const std::string id = system + ":" + event;
  // A saved trigger that did not restore is removed from the state file.
  for (auto it = not_restored_.begin(); it != not_restored_.end(); ++it) {
    if (it->kind != SavedEntry::Kind::Trigger || it->event != id || it->command != text) continue;
    if (auto room = reserve_state(0); !room) return system_failure(std::move(room).error());
    not_restored_.erase(it);
    return finish_command("hist:" + id, text, nullptr, Unit{});
  }
  auto count = [&] {
    auto ev = deployer_->events().find(catalog::EventId{system, event});
    return ev == deployer_->events().end() ? size_t{0} : ev->second->triggers.size() + ev->second->enables.size();
  };
  const size_t before = count();
  CommandResult r = write_trigger_locked(system, event, "!" + std::string(text), parse::kMaxPrintedCommandBytes);
  if (r && count() == before)
    return unexpected(CommandFailure{Diagnostic{ErrorCode::TriggerNotFound, Span{0, 0}, std::string(text), {}},
                                     Error{ErrorKind::NotFound, ENOENT, {}}});
  return r;
}

}  // namespace histd::engine
