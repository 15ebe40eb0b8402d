// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "histd/runtime.h"

namespace histd::runtime {

namespace {

bool is_bpffs(const std::filesystem::path& p) {
  struct statfs st {};
  return statfs(p.c_str(), &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

}  // namespace

Status ensure_bpffs(const std::filesystem::path& pin_dir) {
  std::filesystem::path existing = pin_dir;
  std::error_code ec;
  while (!std::filesystem::exists(existing, ec) && existing.has_parent_path() && existing != existing.root_path())
    existing = existing.parent_path();
  if (is_bpffs(existing)) return ok_status();
  if (existing != "/sys/fs/bpf")
    return fail(ErrorKind::Invalid, EINVAL,
                "the pin directory " + pin_dir.string() + " is not on bpffs, which histd mounts only at /sys/fs/bpf");
  // Two starting together (histds, tests) must not both mount: a second
  // bpffs over the first would hide what the first pinned. The lock is on
  // the directory below the mount, so whoever opened it after the mount
  // locks bpffs's root instead, and finds bpffs there.
  Fd dir(open("/sys/fs/bpf", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir || flock(dir.get(), LOCK_EX) != 0) return fail_errno("locking /sys/fs/bpf to mount bpffs there");
  if (is_bpffs("/sys/fs/bpf") || mount("bpf", "/sys/fs/bpf", "bpf", 0, nullptr) == 0) return ok_status();
  return fail_errno("mounting bpffs at /sys/fs/bpf for the pin directory " + pin_dir.string());
}

}  // namespace histd::runtime
