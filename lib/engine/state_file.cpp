// SPDX-License-Identifier: GPL-2.0-only
// StateFile (state_file.h). What outlives histd: the trigger list in the
// state file, and the tables pinned in bpffs. A restart re-applies the
// triggers; each new table finds its pinned maps (same trigger, same
// layout) and keeps counting from there.
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

#include "engine/state_file.h"

namespace histd::engine {

StateFile::StateFile(std::filesystem::path path, std::filesystem::path pin_dir, const registry::Registry& registry,
                     const deploy::KernelReads& kernel, const deploy::EventPids& pids)
    : path_(std::move(path)), pin_dir_(std::move(pin_dir)), registry_(registry), kernel_(kernel), pids_(pids) {}

std::string StateFile::text() const {
  const registry::KernelFacts kernel{
      [this](uint64_t uid) { return kernel_.paused(uid); }, [this](uint64_t uid) { return kernel_.missed_base(uid); },
      [this](const catalog::EventId& id, const registry::ControlTrigger& e) { return kernel_.control_line(id, e.cmd); },
      [this] { return saved_pids(pids_); }};
  return registry::saved_text(registry_, kernel, not_restored_);
}

std::string StateFile::tmp_path() const { return path_.string() + ".tmp"; }

namespace {

constexpr const char* kCorruptInfix = ".corrupt-";

std::string utc_stamp() {
  const time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

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

Status StateFile::reserve(size_t command_size) {
  drop_room();
  if (path_.empty() || restoring_) return ok_status();
  // Room for the state as it is now plus what one command can add: its
  // text as the trigger file lists it (defaults spelled out), implicit
  // field variables, and the JSON around them.
  const size_t room = text().size() + 4 * command_size + 4096;
  const std::string tmp = tmp_path();
  const std::string dir = path_.parent_path().string();
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
  room_ = std::move(fd);
  return ok_status();
}

void StateFile::drop_room() {
  if (!room_) return;
  room_ = Fd();
  unlink(tmp_path().c_str());
}

Status StateFile::save() {
  if (path_.empty() || restoring_) return ok_status();
  const std::string text = this->text();
  // Written whole, synced, renamed over the old one and the directory
  // synced: a crash or power loss leaves the old file or the new one,
  // never half of one. Into the room reserved before the change when
  // there is one.
  const std::string tmp = tmp_path();
  Fd fd = std::move(room_);
  if (!fd) fd = create_state_tmp(tmp);
  if (!fd) return fail_errno("cannot save triggers to " + tmp);
  const bool written = pwrite(fd.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
                       ftruncate(fd.get(), static_cast<off_t>(text.size())) == 0 && fsync(fd.get()) == 0;
  const int e = errno;
  fd = Fd();
  if (!written || rename(tmp.c_str(), path_.c_str()) != 0) {
    const int why = written ? errno : e;
    unlink(tmp.c_str());
    return fail(ErrorKind::System, why,
                fmt::format("cannot save triggers to {}: {}", path_.string(), std::strerror(why)));
  }
  if (!sync_dir(path_.parent_path()))
    return fail_errno("cannot sync the state directory " + path_.parent_path().string());
  return ok_status();
}

std::vector<StateFile::SavedEntry> StateFile::read(std::vector<std::string>& problems,
                                                   std::optional<Diagnostic>& unreadable) {
  std::vector<SavedEntry> entries;
  // Never through a symlink: root would read (and later replace) whatever
  // file it names. What is not a plain file is set aside like a corrupt one.
  Fd fd(open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd && errno == ENOENT) return entries;  // the first start
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    unreadable = keep_corrupt(!fd && errno == ELOOP ? "a symbolic link (not followed)"
                              : !fd                 ? std::strerror(errno)
                                                    : "not a regular file",
                              problems);
    return entries;
  }
  std::string text;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      unreadable = keep_corrupt(std::strerror(errno), problems);
      return entries;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  auto saved = registry::read_saved(text);
  if (!saved) {
    unreadable = keep_corrupt(saved.error(), problems);
    return entries;
  }
  entries = std::move(*saved);
  return entries;
}

// The file is renamed, never deleted or overwritten: the operator can read
// it, mend it and put it back. The previous instance's programs (its pinned
// links) are detached: nothing would ever read what they count. Its pinned
// tables are kept, for a mended file to adopt, until the copy is removed
// (may_sweep_pins).
Diagnostic StateFile::keep_corrupt(const std::string& why, std::vector<std::string>& problems) {
  const std::string file = path_.string();
  const std::string aside = file + kCorruptInfix + utc_stamp();
  std::string where = "kept as " + aside;
  if (rename(file.c_str(), aside.c_str()) != 0) where = fmt::format("could not be moved aside ({})", strerror(errno));
  size_t links = 0, tables = 0;
  std::error_code ec;
  if (!pin_dir_.empty())
    for (const auto& entry : std::filesystem::directory_iterator(pin_dir_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("event-")) {
        std::filesystem::remove(entry.path(), ec);  // unpinning a link detaches its program
        links += name.ends_with("_link");
      } else if (name.ends_with("_table")) {
        ++tables;
      }
    }
  problem_ = fmt::format(
      "{}: {}; {}. The previous histd's {} attached event(s) were detached; its {} "
      "pinned table(s) are kept until that file is removed",
      file, why, where, links, tables);
  problems.push_back(problem_);
  return Diagnostic{ErrorCode::StateFileUnreadable, Span{0, 0}, file, why + "; " + where};
}

bool StateFile::may_sweep_pins() const {
  if (!not_restored_.empty()) return false;
  const std::string prefix = path_.filename().string() + kCorruptInfix;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_.parent_path(), ec))
    if (entry.path().filename().string().starts_with(prefix)) return false;
  return true;
}

}  // namespace histd::engine
