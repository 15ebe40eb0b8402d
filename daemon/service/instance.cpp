// SPDX-License-Identifier: GPL-2.0-only
#include "service/instance.h"
#include "histd/mountinfo.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "histd/runtime.h"
#include "service/startup.h"

namespace histd::daemon {

namespace {

namespace fs = std::filesystem;

Unexpected<Error> refuse(std::string message) { return fail(ErrorKind::Busy, EBUSY, std::move(message)); }

std::string comm_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/comm", pid));
  std::string comm;
  std::getline(in, comm);
  return comm;
}

std::string describe(pid_t pid) {
  const std::string comm = comm_of(pid);
  return comm == "histd" ? fmt::format("histd (pid {})", pid) : fmt::format("process (pid {}, {})", pid, comm);
}

// The file system type of the topmost mount at `point` ("" when none).
std::string mounted_at(const std::string& point) {
  const std::vector<MountEntry> mounts = mounts_at(point);
  return mounts.empty() ? std::string() : mounts.back().fstype;
}

Expected<Fd> lock_dir(const fs::path& dir, const char* what, bool parents) {
  auto fd = open_private_dir(dir, what, parents);
  if (!fd) return fd;
  if (flock(fd->get(), LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno != EWOULDBLOCK) return fail_errno(fmt::format("locking {}", dir.string()));
  const std::string holder = lock_holder(fd->get());
  return refuse(fmt::format("another {} holds {}", holder.empty() ? "process" : holder, dir.string()));
}

Status check_mount(const std::string& mount) {
  const std::string type = mounted_at(mount);
  if (type.empty()) return ok_status();
  struct stat st {};
  if (stat(mount.c_str(), &st) != 0 && errno == ENOTCONN) return ok_status();  // dead: detached below
  if (type == "fuse.histd") return refuse(fmt::format("another histd serves {} (its tree is mounted there)", mount));
  return refuse(fmt::format("--mount {} is a mount point ({}): histd would mount over it", mount, type));
}

Status check_socket(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return ok_status();
  Fd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) return fail_errno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  // EAGAIN: a listener whose backlog is full is alive too.
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EAGAIN)
    return ok_status();  // ECONNREFUSED: a dead histd's socket
  ucred peer{};
  socklen_t len = sizeof peer;
  const bool known = getsockopt(s.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 && peer.pid > 0;
  return refuse(fmt::format("another {} listens on {}", known ? describe(peer.pid) : "process", path));
}

}  // namespace

std::string lock_holder(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return "";
  // /proc/locks' device:inode, as the fdinfo "lock:" lines print it.
  const std::string id = fmt::format(" {:02x}:{:02x}:{} ", major(st.st_dev), minor(st.st_dev), st.st_ino);
  // The lock belongs to an open file; the fdinfo of every fd open on it
  // shows it, in the process that holds it now (a daemon child too, where
  // /proc/locks names the parent that took it and exited).
  DIR* proc = opendir("/proc");
  if (!proc) return "";
  std::string holder;
  while (dirent* p = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(p->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    const std::string fdinfo = fmt::format("/proc/{}/fdinfo", pid);
    DIR* fds = opendir(fdinfo.c_str());
    if (!fds) continue;
    while (dirent* f = readdir(fds)) {
      if (f->d_name[0] == '.') continue;
      std::ifstream in(fdinfo + "/" + f->d_name);
      std::string line;
      while (std::getline(in, line))
        if (line.starts_with("lock:") && line.find(" FLOCK ") != std::string::npos &&
            line.find(id) != std::string::npos)
          holder = describe(pid);
      if (!holder.empty()) break;
    }
    closedir(fds);
    if (!holder.empty()) break;
  }
  closedir(proc);
  return holder;
}

Expected<Instance> Instance::claim(const Options& opt) {
  Instance inst;
  const fs::path state = opt.state_dir;
  auto state_lock = lock_dir(state, "the state directory", true);
  if (!state_lock) return unexpected(std::move(state_lock).error());
  inst.state_lock_ = std::move(*state_lock);
  if (auto cache = open_private_dir(state / "cache", "the cache directory", false); !cache)
    return unexpected(std::move(cache).error());
  if (auto ok = check_state_file(state / "triggers.json"); !ok) return unexpected(std::move(ok).error());
  if (auto ok = check_mount(opt.mount); !ok) return unexpected(std::move(ok).error());
  if (auto ok = check_socket(opt.socket); !ok) return unexpected(std::move(ok).error());
  if (!opt.pin_dir.empty()) {
    if (auto ok = runtime::ensure_bpffs(opt.pin_dir); !ok) return unexpected(std::move(ok).error());
    auto pin_lock = lock_dir(opt.pin_dir, "the pin directory", true);
    if (!pin_lock) return unexpected(std::move(pin_lock).error());
    inst.pin_lock_ = std::move(*pin_lock);
  }
  // A previous histd that died (kill -9) leaves its FUSE mount behind,
  // disconnected (ENOTCONN): detach it (each, if several were stacked).
  struct stat st {};
  for (int i = 0; i < 16 && stat(opt.mount.c_str(), &st) != 0 && errno == ENOTCONN; ++i)
    umount2(opt.mount.c_str(), MNT_DETACH);
  return inst;
}

}  // namespace histd::daemon
