// SPDX-License-Identifier: GPL-2.0-only
#include "service/startup.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace histd::daemon {

namespace {

namespace fs = std::filesystem;

Unexpected<Error> refuse(std::string message) { return fail(ErrorKind::Invalid, EINVAL, std::move(message)); }

bool inside(const fs::path& p, const fs::path& dir) {
  const std::string d = dir.lexically_normal().string(), s = p.lexically_normal().string();
  return s == d || s.starts_with(d.ends_with('/') ? d : d + "/");
}

bool on_bpffs(const fs::path& p) {
  struct statfs st {};
  return statfs(p.c_str(), &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

std::string mode_of(const struct stat& st) { return fmt::format("{:04o}", st.st_mode & 07777); }

// --pin-dir: on bpffs, or under an empty /sys/fs/bpf that histd mounts it
// on; no '.' in a directory histd makes there (bpffs refuses it with EPERM,
// which used to surface on every trigger, never at start).
Status check_pin_dir(const fs::path& pin_dir) {
  fs::path existing = pin_dir;
  std::vector<std::string> missing;
  struct stat st {};
  while (lstat(existing.c_str(), &st) != 0) {
    // bpffs answers a lookup of a name with a '.' with EPERM.
    const bool dotted = errno == EPERM && existing.string().find('.') != std::string::npos;
    if (errno != ENOENT && !dotted)
      return refuse(fmt::format("--pin-dir {}: {}: {}", pin_dir.string(), existing.string(), strerror(errno)));
    missing.insert(missing.begin(), existing.filename().string());
    existing = existing.parent_path();
  }
  if (!S_ISDIR(st.st_mode))
    return refuse(fmt::format("--pin-dir {}: {} is not a directory{}", pin_dir.string(), existing.string(),
                              S_ISLNK(st.st_mode) ? " (a symbolic link)" : ""));
  // An empty /sys/fs/bpf is where histd mounts bpffs (Instance::claim).
  if (!on_bpffs(existing) && existing != "/sys/fs/bpf")
    return refuse(
        fmt::format("--pin-dir {} is not on a bpffs ({} is not one): tables could not be pinned; give "
                    "a directory on bpffs, or --pin-dir '' for none",
                    pin_dir.string(), existing.string()));
  for (const std::string& name : missing)
    if (name.find('.') != std::string::npos)
      return refuse(fmt::format("--pin-dir {}: bpffs refuses names with a '.' ({}): every pin would fail",
                                pin_dir.string(), name));
  return ok_status();
}

}  // namespace

Status check_options(const Options& opt, gid_t& group) {
  sockaddr_un addr{};
  if (opt.socket.size() >= sizeof(addr.sun_path))
    return refuse(fmt::format("--socket {}: {} bytes long, a unix socket's path holds at most {}", opt.socket,
                              opt.socket.size(), sizeof(addr.sun_path) - 1));
  struct stat st {};
  if (stat(opt.mount.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return refuse(fmt::format("--mount {}: not a directory", opt.mount));
  } else if (errno != ENOENT && errno != ENOTCONN) {  // ENOTCONN: a dead histd's tree, detached later
    return refuse(fmt::format("--mount {}: {}", opt.mount, strerror(errno)));
  }
  for (const auto& [name, path] : {std::pair{"--socket", opt.socket}, std::pair{"--state-dir", opt.state_dir}})
    if (inside(path, opt.mount))
      return refuse(fmt::format("{} {} is inside --mount {}: the tree would hide it", name, path, opt.mount));
  if (!opt.pin_dir.empty())
    if (auto ok = check_pin_dir(opt.pin_dir); !ok) return ok;
  // A path is checked now; a bare name is looked up in PATH at each compile.
  if (opt.clang.find('/') != std::string::npos && access(opt.clang.c_str(), X_OK) != 0)
    return refuse(fmt::format("--clang {}: {}", opt.clang, strerror(errno)));
  group = 0;
  if (!opt.group.empty()) {
    struct group* g = getgrnam(opt.group.c_str());
    if (!g) return refuse(fmt::format("no group {}", opt.group));
    group = g->gr_gid;
  }
  return ok_status();
}

Expected<Fd> open_private_dir(const fs::path& dir, const char* what, bool parents) {
  // Whoever may rename entries in a parent could swap the directory for
  // theirs between start and any later use.
  for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0) {
      const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(st.st_mode & S_ISVTX);
      if ((st.st_uid != 0 && st.st_uid != geteuid()) || others_write)
        return refuse(fmt::format("{} {}: its parent {} is owned by uid {} with mode {}: others could replace it", what,
                                  dir.string(), p.string(), st.st_uid, mode_of(st)));
    }
    if (p == p.root_path()) break;
  }
  struct stat link {};
  if (lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
    return refuse(fmt::format("{} {} is a symbolic link: refusing it (it is not followed)", what, dir.string()));
  std::error_code ec;
  if (parents) fs::create_directories(dir.parent_path(), ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return refuse(fmt::format("{} {}: {}", what, dir.string(), strerror(errno)));
  Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd)
    return refuse(fmt::format("{} {}: {}", what, dir.string(),
                              errno == ELOOP ? "a symbolic link, not followed" : strerror(errno)));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return refuse(fmt::format("{} {}: {}", what, dir.string(), strerror(errno)));
  // Root loads what is in it: its owner could plant objects, triggers, pins.
  if (st.st_uid != geteuid())
    return refuse(fmt::format("{} {} is owned by uid {}, not by histd's user (uid {}): refusing it", what, dir.string(),
                              st.st_uid, geteuid()));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return refuse(
        fmt::format("{} {} is writable by group or others (mode {}): refusing it", what, dir.string(), mode_of(st)));
  // Saved triggers, compiled objects, pins: histd's alone to read too.
  fchmod(fd.get(), 0700);
  return fd;
}

Status check_state_file(const fs::path& file) {
  struct stat st {};
  if (lstat(file.c_str(), &st) != 0)
    return errno == ENOENT ? ok_status() : refuse(fmt::format("the state file {}: {}", file.string(), strerror(errno)));
  if (S_ISLNK(st.st_mode))
    return refuse(fmt::format("the state file {} is a symbolic link: refusing it (it is not followed)", file.string()));
  if (!S_ISREG(st.st_mode)) return refuse(fmt::format("the state file {} is not a regular file", file.string()));
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
    return refuse(fmt::format("the state file {} is owned by uid {} with mode {}: refusing it", file.string(),
                              st.st_uid, mode_of(st)));
  return ok_status();
}

}  // namespace histd::daemon
