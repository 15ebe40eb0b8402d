// SPDX-License-Identifier: GPL-2.0-only
// EventPids (histd/event_pids.h): set_event_pid's list and options/event-fork.
#include "histd/event_pids.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "deploy/kernel_objects.h"
#include "hist_shared.h"

namespace histd::deploy {

EventPids::EventPids(Kernel& kernel, KernelObjects& objects, Fd map)
    : kernel_(kernel), objects_(objects), map_(std::move(map)) {
  // No list in force, as tracefs starts.
  (void)objects_.set_paused(HISTD_PID_FILTER_SLOT, true);
}

EventPids::~EventPids() = default;

std::vector<uint32_t> EventPids::pids() const {
  std::vector<uint32_t> out;
  for (const std::vector<uint8_t>& key : kernel_.keys(map_.get(), sizeof(uint32_t))) {
    uint32_t pid = 0;
    std::memcpy(&pid, key.data(), sizeof(pid));
    out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool EventPids::in_force() const { return !objects_.is_paused(HISTD_PID_FILTER_SLOT); }

Status EventPids::add(std::span<const uint32_t> pids) {
  const std::vector<uint32_t> listed = this->pids();
  std::set<uint32_t> fresh(pids.begin(), pids.end());
  for (uint32_t pid : listed) fresh.erase(pid);
  if (listed.size() + fresh.size() > HISTD_MAX_EVENT_PIDS)
    return fail(ErrorKind::Busy, ENOSPC,
                fmt::format("set_event_pid lists at most {} pids ({} listed, {} more written)", HISTD_MAX_EVENT_PIDS,
                            listed.size(), fresh.size()));
  const uint8_t one = 1;
  std::vector<uint32_t> added;
  for (uint32_t pid : fresh) {
    Status st = kernel_.update(map_.get(), bytes_of(pid), bytes_of(one));
    if (!st) {
      // All or nothing, as the kernel's write: those added go again.
      for (uint32_t a : added) (void)kernel_.remove(map_.get(), bytes_of(a));
      return st;
    }
    added.push_back(pid);
  }
  // The list first, then the word: no event is ignored for want of a pid
  // being written.
  return objects_.set_paused(HISTD_PID_FILTER_SLOT, listed.empty() && pids.empty());
}

Status EventPids::clear() {
  // The word first: no event is ignored for a list half gone.
  if (Status st = objects_.set_paused(HISTD_PID_FILTER_SLOT, true); !st) return st;
  for (uint32_t pid : pids()) (void)kernel_.remove(map_.get(), bytes_of(pid));
  return ok_status();
}

Status EventPids::follow_forks(bool on) {
  if (on == follows_forks()) return ok_status();
  if (!on) {
    follower_.reset();
    return ok_status();
  }
  auto f = kernel_.follow_forks(map_.get());
  if (!f) return unexpected(std::move(f).error());
  follower_ = std::move(*f);
  return ok_status();
}

}  // namespace histd::deploy
