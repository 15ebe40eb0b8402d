// SPDX-License-Identifier: GPL-2.0-only
// options/event-fork's programs (event_pids.bpf.o) on the tree's pid list.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "histd/runtime.h"

namespace histd::runtime {

namespace {

Unexpected<Error> follower_fail(int err, const std::string& what) {
  const int e = err < 0 ? -err : (err ? err : EINVAL);
  return fail(ErrorKind::Bpf, e, fmt::format("options/event-fork: {}: {}", what, std::strerror(e)));
}

}  // namespace

Expected<ForkFollower> ForkFollower::attach(const BpfPaths& paths, int pids_map) {
  ForkFollower f;
  const std::string object = (paths.include_dir / "event_pids.bpf.o").string();
  f.obj_ = bpf_object__open_file(object.c_str(), nullptr);
  if (!f.obj_) return follower_fail(-errno, "opening " + object);
  bpf_map* map = bpf_object__find_map_by_name(f.obj_, "histd_pids");
  if (!map) return follower_fail(ENOENT, object + " has no histd_pids");
  if (int err = bpf_map__reuse_fd(map, pids_map); err != 0) return follower_fail(err, "sharing the pid list");
  if (int err = bpf_object__load(f.obj_); err != 0) return follower_fail(err, "loading " + object);
  bpf_program* fork = bpf_object__find_program_by_name(f.obj_, "follow_fork");
  bpf_program* free = bpf_object__find_program_by_name(f.obj_, "follow_free");
  if (!fork || !free) return follower_fail(ENOENT, object + " lacks its programs");
  // Frees first: a pid freed between the two attaches is not left behind
  // once its fork was followed.
  f.free_ = bpf_program__attach(free);
  if (!f.free_) return follower_fail(-errno, "attaching at sched_process_free");
  f.fork_ = bpf_program__attach(fork);
  if (!f.fork_) return follower_fail(-errno, "attaching at sched_process_fork");
  return f;
}

ForkFollower::ForkFollower(ForkFollower&& o) noexcept
    : obj_(std::exchange(o.obj_, nullptr)),
      fork_(std::exchange(o.fork_, nullptr)),
      free_(std::exchange(o.free_, nullptr)) {}

ForkFollower& ForkFollower::operator=(ForkFollower&& o) noexcept {
  if (this != &o) {
    ForkFollower gone(std::move(*this));
    obj_ = std::exchange(o.obj_, nullptr);
    fork_ = std::exchange(o.fork_, nullptr);
    free_ = std::exchange(o.free_, nullptr);
  }
  return *this;
}

ForkFollower::~ForkFollower() {
  // Forks stop being followed before frees: a child listed meanwhile is
  // still taken off when it goes.
  if (fork_) bpf_link__destroy(fork_);
  if (free_) bpf_link__destroy(free_);
  if (obj_) bpf_object__close(obj_);
}

}  // namespace histd::runtime
