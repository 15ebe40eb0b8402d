// SPDX-License-Identifier: GPL-2.0-only
// A tree's set_event_pid and options/event-fork, as the kernel's
// trace_array keeps filtered_pids and TRACE_ITER_EVENT_FORK: the pids
// listed, in a BPF hash (codegen::kPidsMap) every program of the deployer
// asks at its entry (codegen::PidCheck); the control word saying whether a
// list is in force (HISTD_PID_FILTER_SLOT: with one, only the events a
// listed task decides are seen, none when the list has emptied); and the
// programs following forks and frees (Kernel::follow_forks). The pids are
// the tasks' task->pid, the machine's first PID namespace's numbers, as
// written. Part of the deployer (Deployer::event_pids()), which made the
// map; the engine calls it under its lock, and BPF changes the list too.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "histd/fd.h"
#include "histd/kernel.h"
#include "histd/result.h"

namespace histd::deploy {

class KernelObjects;

class EventPids {
 public:
  // `kernel` and `objects` (the control array) outlive it; `map`: the pid
  // list the deployer made (empty, no list in force).
  EventPids(Kernel& kernel, KernelObjects& objects, Fd map);
  ~EventPids();
  EventPids(const EventPids&) = delete;
  EventPids& operator=(const EventPids&) = delete;

  int map_fd() const { return map_.get(); }
  // set_event_pid's read: the pids listed, ascending (the kernel's list is
  // a bitmap, read from the lowest pid up).
  std::vector<uint32_t> pids() const;
  // Whether a list is in force (it may have emptied as its tasks went).
  bool in_force() const;
  // A write: `pids` added to those listed, as the kernel's trace_pid_write()
  // makes its new list from the old one and the pids written; a list with
  // none is no list. ENOSPC past HISTD_MAX_EVENT_PIDS, changing nothing.
  Status add(std::span<const uint32_t> pids);
  // An open with O_TRUNC: no list.
  Status clear();
  // options/event-fork.
  bool follows_forks() const { return follower_ != nullptr; }
  Status follow_forks(bool on);

 private:
  Kernel& kernel_;
  KernelObjects& objects_;
  Fd map_;
  std::unique_ptr<Kernel::Follower> follower_;
};

}  // namespace histd::deploy
