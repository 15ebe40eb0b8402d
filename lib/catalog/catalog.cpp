// SPDX-License-Identifier: GPL-2.0-only
// The event catalog: which events a tracefs tree has, and their formats.
#include "histd/catalog.h"

#include <mutex>

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace histd::catalog {

namespace fs = std::filesystem;

namespace {

// Format files are a few KB; anything far larger is not one, and reading it
// whole could exhaust memory.
constexpr size_t kMaxFormatSize = 1 << 20;

Unexpected<Error> fs_error(const std::error_code& ec, const fs::path& path) {
  if (ec == std::errc::no_such_file_or_directory) {
    return fail(ErrorKind::NotFound, ENOENT, path.string() + ": " + ec.message());
  }
  return fail(ErrorKind::System, ec.value(), path.string() + ": " + ec.message());
}

// tracefs reports a size of 0 for every file, so read until EOF rather than
// trusting stat.
Expected<std::string> read_small_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fs_error(std::error_code(errno, std::generic_category()), path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return fs_error(std::error_code(e, std::generic_category()), path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxFormatSize) {
      ::close(fd);
      return fail(ErrorKind::Invalid, EFBIG, path.string() + ": larger than a format file can be");
    }
  }
  ::close(fd);
  return out;
}

// Whether the event in the tree at `root` still has this format (a probe
// event made again under its name may not; its id may be the same).
bool same_format(const fs::path& root, const EventFormat& format) {
  auto text = read_small_file(root / "events" / format.system / format.name / "format");
  return text && *text == format.text;
}

// True when `dir` has events/ (a directory); used to tell a tracefs mount
// from the empty directory it is mounted on.
bool has_events(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "events", ec);
}

bool less_than(const EventId& id, std::string_view system, std::string_view event) {
  return std::string_view(id.system) < system ||
         (std::string_view(id.system) == system && std::string_view(id.name) < event);
}

}  // namespace

Expected<Catalog> Catalog::open(fs::path root) {
  Catalog catalog;
  catalog.root_ = std::move(root);
  const fs::path events_dir = catalog.root_ / "events";

  std::error_code ec;
  fs::directory_iterator systems(events_dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
      return fail(ErrorKind::NotFound, ENOENT,
                  "no events directory at " + events_dir.string() + " (not a tracefs root?)");
    }
    return fs_error(ec, events_dir);
  }

  // Formats are not read here: a real tree has thousands of events and a
  // daemon needs only the few it traces. Directory types come from the
  // readdir entries; the only stat per event is the format check.
  for (; systems != fs::directory_iterator(); systems.increment(ec)) {
    if (ec) return fs_error(ec, events_dir);
    const fs::directory_entry& sys_entry = *systems;
    // events/ also holds enable, header_page, header_event: files, skipped.
    std::error_code type_ec;  // a vanished entry is simply not listed
    if (!sys_entry.is_directory(type_ec)) continue;
    std::string system = sys_entry.path().filename().string();

    std::error_code sub_ec;
    fs::directory_iterator events(sys_entry.path(), sub_ec);
    if (sub_ec) {
      // A module unloaded between the two readdirs takes its system along.
      if (sub_ec == std::errc::no_such_file_or_directory) continue;
      return fs_error(sub_ec, sys_entry.path());
    }
    for (; events != fs::directory_iterator(); events.increment(sub_ec)) {
      if (sub_ec) return fs_error(sub_ec, sys_entry.path());
      const fs::directory_entry& ev_entry = *events;
      // Skips the system's own enable and filter files.
      if (!ev_entry.is_directory(type_ec)) continue;
      if (!fs::is_regular_file(ev_entry.path() / "format", type_ec)) continue;
      catalog.events_.push_back(EventId{system, ev_entry.path().filename().string()});
    }
    if (sub_ec) return fs_error(sub_ec, sys_entry.path());
  }
  if (ec) return fs_error(ec, events_dir);

  std::sort(catalog.events_.begin(), catalog.events_.end());
  return catalog;
}

void Catalog::add_dynamic(EventFormat format) {
  format.syscall = syscall_event(format);
  format.source = event_source(format);
  mark_kernel_addresses(format);
  std::lock_guard lock(*cache_mu_);
  EventId id{format.system, format.name};
  dynamic_[id] = std::make_shared<const EventFormat>(std::move(format));
}

void Catalog::remove_dynamic(std::string_view system, std::string_view event) {
  std::lock_guard lock(*cache_mu_);
  dynamic_.erase(EventId{std::string(system), std::string(event)});
}

std::vector<EventId> Catalog::dynamic_events() const {
  std::lock_guard lock(*cache_mu_);
  std::vector<EventId> out;
  for (const auto& [id, f] : dynamic_) out.push_back(id);
  return out;
}

bool Catalog::contains(std::string_view system, std::string_view event) const {
  {
    std::lock_guard lock(*cache_mu_);
    if (dynamic_.count(EventId{std::string(system), std::string(event)})) return true;
  }
  auto it = std::partition_point(events_.begin(), events_.end(),
                                 [&](const EventId& id) { return less_than(id, system, event); });
  if (it != events_.end() && it->system == system && it->name == event) return true;
  return discover(EventId{std::string(system), std::string(event)});
}

bool Catalog::discover(const EventId& id) const {
  // Only plain names reach the file system ("..", "a/b" never do).
  auto plain = [](const std::string& name) {
    return !name.empty() && name.size() < 256 && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
  };
  if (root_.empty() || !plain(id.system) || !plain(id.name)) return false;
  std::error_code ec;
  const bool present = fs::is_regular_file(root_ / "events" / id.system / id.name / "format", ec);
  std::lock_guard lock(*cache_mu_);
  if (present) {
    discovered_.insert(id);
  } else if (discovered_.erase(id)) {
    // Gone (a probe event deleted): a new event of that name may differ.
    cache_.erase(id);
  }
  return present;
}

std::vector<EventId> Catalog::discovered_events() const {
  std::lock_guard lock(*cache_mu_);
  return std::vector<EventId>(discovered_.begin(), discovered_.end());
}

std::vector<std::string> Catalog::live_systems() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(root_ / "events", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) out.push_back(it->path().filename().string());
  }
  return out;
}

std::vector<std::string> Catalog::live_events(std::string_view system) const {
  std::vector<std::string> out;
  const std::string sys(system);
  if (sys.empty() || sys == "." || sys == ".." || sys.find('/') != std::string::npos) return out;
  std::error_code ec;
  for (fs::directory_iterator it(root_ / "events" / sys, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec) && fs::is_regular_file(it->path() / "format", type_ec))
      out.push_back(it->path().filename().string());
  }
  return out;
}

void Catalog::attach_probe_definition(EventFormat& format) const {
  // Its line in kprobe_events, as the kernel lists it ("p:GROUP/EVENT ...").
  for (const char* file : {"kprobe_events", "uprobe_events"}) {
    auto text = read_small_file(root_ / file);
    if (!text) continue;
    std::string_view rest = *text;
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      const size_t colon = line.find(':'), space = line.find(' ');
      if (colon == std::string_view::npos || space == std::string_view::npos || space < colon) continue;
      if (line.substr(colon + 1, space - colon - 1) != format.system + "/" + format.name) continue;
      auto definition = parse_probe_definition(line);
      if (definition)
        format.probe = std::move(*definition);
      else
        format.probe_error = std::move(definition).error().context;
      return;
    }
  }
  format.probe_error = "its definition is in neither kprobe_events nor uprobe_events";
}

void Catalog::forget_probes() {
  std::lock_guard lock(*cache_mu_);
  std::erase_if(cache_, [](const auto& entry) { return source_traits(entry.second->source).format_may_change; });
}

Expected<std::shared_ptr<const EventFormat>> Catalog::event(std::string_view system, std::string_view event) const {
  // Checking the list first also keeps names like "../x" off the file system.
  if (!contains(system, event)) {
    return fail(ErrorKind::NotFound, ENOENT, "no such event: " + std::string(system) + ":" + std::string(event));
  }
  EventId id{std::string(system), std::string(event)};
  std::lock_guard lock(*cache_mu_);
  if (auto it = dynamic_.find(id); it != dynamic_.end()) return it->second;
  if (auto it = cache_.find(id); it != cache_.end()) {
    // A probe event deleted and made again behind histd's back may have
    // other fields.
    if (!source_traits(it->second->source).format_may_change || same_format(root_, *it->second)) return it->second;
    cache_.erase(it);
  }

  const fs::path path = root_ / "events" / id.system / id.name / "format";
  auto text = read_small_file(path);
  if (!text) {
    // Formats are read on first use: tracefs unmounted since start shows
    // here, for events not read before.
    Error e = std::move(text).error();
    if (!has_events(root_)) {
      e.kind = ErrorKind::System;  // not a missing event: tracefs went away
      e.context = "cannot read the format of " + id.system + ":" + id.name + ": tracefs is no longer mounted at " +
                  root_.string() + " (" + e.context + ")";
    }
    return unexpected(std::move(e));
  }
  auto parsed = parse_format(*text, system);
  if (!parsed) {
    Error e = std::move(parsed).error();
    e.context = path.string() + ": " + e.context;
    return unexpected(std::move(e));
  }
  if (parsed->name != event) {
    return fail(ErrorKind::Invalid, EINVAL,
                path.string() + ": names event '" + parsed->name + "', expected '" + std::string(event) + "'");
  }
  if (parsed->source == EventSource::Probe) attach_probe_definition(*parsed);
  auto format = std::make_shared<const EventFormat>(std::move(*parsed));
  cache_.emplace(std::move(id), format);
  return format;
}

Expected<fs::path> find_tracefs() {
  const fs::path tracing = "/sys/kernel/tracing";
  if (has_events(tracing)) return tracing;
  // Mounted but closed to this user (tracefs is root's, 0700, unless
  // mounted with gid=): a mount of its own would only add EPERM.
  if (::access(tracing.c_str(), X_OK) != 0 && errno == EACCES)
    return fail(ErrorKind::NotFound, EACCES,
                "no tracefs for this user: " + tracing.string() +
                    " is closed to it (tracefs is root's unless mounted with gid=); run as root, or give --tracefs "
                    "a directory holding a readable copy of its events/");

  std::string mount_error;
  if (::mount("nodev", tracing.c_str(), "tracefs", 0, nullptr) == 0) {
    if (has_events(tracing)) return tracing;
    mount_error = "mounted tracefs but it has no events/";
  } else {
    mount_error = std::string("mounting tracefs failed: ") + std::strerror(errno);
  }

  const fs::path debug_tracing = "/sys/kernel/debug/tracing";
  if (has_events(debug_tracing)) return debug_tracing;

  return fail(
      ErrorKind::NotFound, ENOENT,
      "no tracefs: " + tracing.string() + " has no events/ (" + mount_error + "), nor has " + debug_tracing.string());
}

}  // namespace histd::catalog
