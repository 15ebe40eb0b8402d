// SPDX-License-Identifier: GPL-2.0-only
// A pid of histd's PID namespace -> the machine's, through a task iterator.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "histd/runtime.h"

namespace histd::runtime {
namespace {

// Whether histd runs in the machine's first PID namespace: pid 2 there is
// kthreadd, a kernel thread, which has a pid in that namespace only (and
// whose namespace is it). In a container pid 2 is one of its own tasks, or
// none; under `unshare --pid` without a /proc of its own it is kthreadd,
// but in another namespace than histd's.
bool in_first_pid_namespace() {
  std::error_code ec;
  const auto mine = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  if (ec) return true;  // cannot tell: as before
  const auto kthreadd = std::filesystem::read_symlink("/proc/2/ns/pid", ec);
  if (ec) return false;
  FILE* f = std::fopen("/proc/2/comm", "re");
  char comm[32] = {};
  const bool named = f && std::fgets(comm, sizeof(comm), f) && std::string_view(comm) == "kthreadd\n";
  if (f) std::fclose(f);
  return named && kthreadd == mine;
}

}  // namespace

HostPids::HostPids() : first_namespace_(in_first_pid_namespace()) {}

HostPids::~HostPids() {
  if (obj_) bpf_object__close(obj_);
}

uint32_t HostPids::host_pid(pid_t pid) {
  if (first_namespace_ || pid <= 0) return static_cast<uint32_t>(pid);
  std::lock_guard lock(mu_);
  if (!loaded_) {
    loaded_ = true;
    auto paths = find_bpf_paths();
    if (paths) {
      obj_ = bpf_object__open_file((paths->include_dir / "host_pid.bpf.o").c_str(), nullptr);
      if (obj_ && bpf_object__load(obj_) != 0) {
        bpf_object__close(obj_);
        obj_ = nullptr;
      }
    }
  }
  bpf_program* prog = obj_ ? bpf_object__find_program_by_name(obj_, "host_pid") : nullptr;
  if (!prog) return static_cast<uint32_t>(pid);
  // The iterator visits the one task whose pid, in this (the caller's)
  // namespace, is `pid`.
  union bpf_iter_link_info info = {};
  info.task.tid = static_cast<uint32_t>(pid);
  LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
  bpf_link* link = bpf_program__attach_iter(prog, &opts);
  if (!link) return static_cast<uint32_t>(pid);
  uint32_t host = 0;
  const int fd = bpf_iter_create(bpf_link__fd(link));
  const bool read_one = fd >= 0 && read(fd, &host, sizeof(host)) == static_cast<ssize_t>(sizeof(host));
  if (fd >= 0) close(fd);
  bpf_link__destroy(link);
  return read_one ? host : static_cast<uint32_t>(pid);
}

}  // namespace histd::runtime
