// What outlives histd: the trigger list in the state file, and the tables
// pinned in bpffs. A restart re-applies the triggers; each new table finds
// its pinned maps (same trigger, same layout) and keeps counting from there.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/engine_state.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// The map behind a pin, if its shape is the one wanted.
Fd open_pinned(const std::string& path, uint32_t type, uint32_t key_size, uint32_t value_size,
                        uint32_t max_entries) {
  Fd fd(bpf_obj_get(path.c_str()));
  if (!fd) return fd;
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0 || info.type != type || info.key_size != key_size ||
      info.value_size != value_size || info.max_entries != max_entries)
    return Fd();
  return fd;
}

}  // namespace

std::string Engine::pin_base(const plan::HistPlan& plan) const {
  if (options_.pin_dir.empty()) return {};
  // Named tables are one table whoever uses them; others belong to their
  // trigger (its identity ignores the size, the layout check does not).
  const std::string id = plan.name ? "name:" + *plan.name
                                   : fmt::format("{}:{}:{}", plan.system, plan.event, plan.identity());
  return (options_.pin_dir / fmt::format("{:016x}", fnv1a(id))).string();
}

// A raw-tracepoint attachment pins under its own name: a histd restarted
// with the other kind attaches afresh, and sweep_pins() drops the old pair.
std::string Engine::event_pin_base(const EventState& ev, const std::optional<catalog::SyscallEvent>& syscall) const {
  if (options_.pin_dir.empty()) return {};
  return (options_.pin_dir /
          fmt::format("event-{:016x}{}", fnv1a(ev.system + ":" + ev.event), syscall ? "-raw" : ""))
      .string();
}

void Engine::sweep_pins() {
  if (options_.pin_dir.empty()) return;
  std::set<std::string> used;
  for (const auto& [id, ev] : events_) {
    if (ev->attachment && !ev->attachment->pin_base().empty()) {
      used.insert(ev->attachment->pin_base() + "_link");
      used.insert(ev->attachment->pin_base() + "_slots");
    }
    for (const auto& t : ev->triggers)
      for (const std::string& path : t->table->pin_paths()) used.insert(path);
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.pin_dir, ec)) {
    // Unpinning a stale link detaches its program.
    if (!used.count(entry.path().string())) std::filesystem::remove(entry.path(), ec);
  }
}

bool Engine::adopt_pinned(TableState& t) {
  if (t.pin_base.empty()) return false;
  Fd map = open_pinned(t.pin_base + "_table", table_map_type(t.layout), t.layout.table_map_key_size(),
                                t.layout.table_value_size(), t.layout.table_map_entries());
  Fd stats =
      open_pinned(t.pin_base + "_stats", BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(histd_table_stats), 1);
  if (!map || !stats) return false;
  Fd hot;
  if (t.layout.hot_slots > 0) {
    hot = open_pinned(t.pin_base + "_hot", BPF_MAP_TYPE_PERCPU_ARRAY, 4, t.layout.hot_value_size(),
                      t.layout.hot_slots);
    if (!hot) {
      // Pinned by a histd without hot slots (or with others): the table's
      // counts are all in the hash and stats; the slots start empty.
      auto fresh = create_hot_slots(t.layout);
      if (!fresh) return false;
      hot = std::move(*fresh);
      std::error_code ec;
      std::filesystem::remove(t.pin_base + "_hot", ec);
      if (bpf_obj_pin(hot.get(), (t.pin_base + "_hot").c_str()) != 0) return false;
    }
  }
  t.map = std::move(map);
  t.stats = std::move(stats);
  t.hot = std::move(hot);
  t.adopted = true;
  return true;
}

Status Engine::pin_table(TableState& t) {
  if (t.pin_base.empty()) return ok_status();
  std::error_code ec;
  std::filesystem::create_directories(options_.pin_dir, ec);
  // A stale pin of another shape is replaced.
  for (const std::string& path : t.pin_paths()) std::filesystem::remove(path, ec);
  if (bpf_obj_pin(t.map.get(), (t.pin_base + "_table").c_str()) != 0 ||
      bpf_obj_pin(t.stats.get(), (t.pin_base + "_stats").c_str()) != 0 ||
      (t.hot && bpf_obj_pin(t.hot.get(), (t.pin_base + "_hot").c_str()) != 0))
    return fail_errno("pinning a table under " + options_.pin_dir.string());
  return ok_status();
}

std::string Engine::state_text() const {
  // Hist triggers in creation order: a trigger's $references need their
  // owners back first. Enables after them, oldest first per event. Entries
  // that did not restore follow as they were saved, in their order: what
  // they depend on is either restored (before them) or among them.
  std::vector<std::pair<uint64_t, nlohmann::json>> hist;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [id, ev] : events_) {
    const std::string event = id.system + ":" + id.name;
    for (const auto& t : ev->triggers) {
      nlohmann::json entry{{"event", event}, {"command", t->plan.trigger_text()}, {"paused", is_paused(t->slot)}};
      // Where its Missed count starts on the pinned dispatcher's counter.
      if (t->missed_base) entry["missed_base"] = t->missed_base;
      // The configuration directory's own (a reload may change or remove
      // it); an older histd ignores the member.
      if (const std::string& config = config_of(*t); !config.empty()) entry["config"] = config;
      hist.emplace_back(t->uid, std::move(entry));
    }
  }
  std::sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [uid, entry] : hist) list.push_back(std::move(entry));
  for (const auto& [id, ev] : events_)
    for (auto it = ev->enables.rbegin(); it != ev->enables.rend(); ++it) {
      nlohmann::json entry{{"event", id.system + ":" + id.name}, {"command", enable_line(**it)}};
      if (const std::string& config = config_of(*ev, **it); !config.empty()) entry["config"] = config;
      list.push_back(std::move(entry));
    }
  nlohmann::json synthetic = nlohmann::json::array();
  nlohmann::json enabled = nlohmann::json::array();
  // Definitions stay plain strings (what older histds read); the names of
  // the configuration's own are listed beside them.
  nlohmann::json config_synthetic = nlohmann::json::array();
  for (const auto& [name, s] : registry_.synthetics()) {
    synthetic.push_back(synth::list_line(s.def));
    if (s.enabled) enabled.push_back(name);
    if (s.config) config_synthetic.push_back(name);
  }
  for (const SavedEntry& e : not_restored_) {
    if (e.applying) continue;
    nlohmann::json raw = nlohmann::json::parse(e.raw, nullptr, false);
    switch (e.kind) {
      case SavedEntry::Kind::Synthetic:
        if (!e.config.empty()) config_synthetic.push_back(e.config);
        synthetic.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::Trigger:
        list.push_back(std::move(raw));
        break;
      case SavedEntry::Kind::Enabled:
        enabled.push_back(std::move(raw));
        break;
    }
  }
  nlohmann::json doc{{"version", 1},
                     {"synthetic_events", synthetic},
                     {"enabled_synthetic_events", enabled},
                     {"triggers", list}};
  if (!config_synthetic.empty()) doc["config_synthetic_events"] = std::move(config_synthetic);
  return doc.dump(2) + "\n";
}

std::string Engine::state_tmp_path() const { return options_.state_file.string() + ".tmp"; }

namespace {

// The next state file, created afresh: whatever is at its path (a file of
// a run that died, or a symlink someone planted to make root write through
// it) is unlinked, never followed.
Fd create_state_tmp(const std::string& tmp) {
  unlink(tmp.c_str());
  return Fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
}

// A rename is durable once the directory holding it is on disk.
bool sync_dir(const std::filesystem::path& dir) {
  Fd fd(open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return fd && fsync(fd.get()) == 0;
}

}  // namespace

Status Engine::reserve_state(size_t command_size) {
  drop_state_room();
  if (options_.state_file.empty() || restoring_) return ok_status();
  // Room for the state as it is now plus what one command can add: its
  // text as the trigger file lists it (defaults spelled out), implicit
  // field variables, and the JSON around them.
  const size_t room = state_text().size() + 4 * command_size + 4096;
  const std::string tmp = state_tmp_path();
  const std::string dir = options_.state_file.parent_path().string();
  Fd fd = create_state_tmp(tmp);
  if (!fd) {
    const int e = errno;
    return fail(ErrorKind::System, e, fmt::format("cannot save triggers in {}: {}", dir, std::strerror(e)));
  }
  // Blocks taken now are the new file's to keep: the write after the
  // change cannot run out of space.
  if (int e = posix_fallocate(fd.get(), 0, static_cast<off_t>(room)); e != 0) {
    unlink(tmp.c_str());
    return fail(ErrorKind::System, e, fmt::format("cannot save triggers in {}: {}", dir, std::strerror(e)));
  }
  state_room_ = std::move(fd);
  return ok_status();
}

void Engine::drop_state_room() {
  if (!state_room_) return;
  state_room_ = Fd();
  unlink(state_tmp_path().c_str());
}

Status Engine::save_state() {
  if (options_.state_file.empty() || restoring_) return ok_status();
  const std::string text = state_text();
  // Written whole, synced, renamed over the old one and the directory
  // synced: a crash or power loss leaves the old file or the new one,
  // never half of one. Into the room reserved before the change when
  // there is one.
  const std::string tmp = state_tmp_path();
  Fd fd = std::move(state_room_);
  if (!fd) fd = create_state_tmp(tmp);
  if (!fd) return fail_errno("cannot save triggers to " + tmp);
  const bool written = pwrite(fd.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
                       ftruncate(fd.get(), static_cast<off_t>(text.size())) == 0 && fsync(fd.get()) == 0;
  const int e = errno;
  fd = Fd();
  if (!written || rename(tmp.c_str(), options_.state_file.c_str()) != 0) {
    const int why = written ? errno : e;
    unlink(tmp.c_str());
    return fail(ErrorKind::System, why,
                fmt::format("cannot save triggers to {}: {}", options_.state_file.string(), std::strerror(why)));
  }
  if (!sync_dir(options_.state_file.parent_path()))
    return fail_errno("cannot sync the state directory " + options_.state_file.parent_path().string());
  return ok_status();
}

// Triggers come back one at a time, each rebuilding its event, but none of
// those programs is installed on the way: after a kill -9 the dispatcher
// adopted from the pins still runs the dead histd's program, which counts
// every trigger of the event into the same pinned tables. Installing the
// program of the first restored trigger would leave the event's other
// triggers uncounted until their own turn (a compile each). One swap per
// event, to the program holding all of them, loses nothing.
void Engine::install_restored(std::vector<std::string>& problems) {
  for (auto& [id, ev] : events_) {
    if (!ev->attachment || !ev->program) continue;
    auto st = ev->attachment->install(ev->program->event_fd());
    if (!st) problems.push_back(fmt::format("{}:{}: {}", id.system, id.name, st.error().context));
  }
}

}  // namespace histd::engine
