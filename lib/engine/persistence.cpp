// SPDX-License-Identifier: GPL-2.0-only
// What outlives histd: the trigger list in the state file, and the tables
// pinned in bpffs. A restart re-applies the triggers; each new table finds
// its pinned maps (same trigger, same layout) and keeps counting from there.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "histd/engine.h"

namespace histd::engine {

std::string Engine::state_text() const {
  const registry::KernelFacts kernel{[this](uint64_t uid) { return deployer_->reads().paused(uid); },
                                     [this](uint64_t uid) { return deployer_->reads().missed_base(uid); },
                                     [this](const catalog::EventId& id, const registry::ControlTrigger& e) {
                                       return deployer_->reads().control_line(id, e.cmd);
                                     }};
  return registry::saved_text(registry_, kernel, not_restored_);
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

}  // namespace histd::engine
