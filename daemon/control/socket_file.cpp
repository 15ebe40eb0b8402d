// SPDX-License-Identifier: GPL-2.0-only
#include "control/socket_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace histd::control {

namespace {

namespace fs = std::filesystem;

// Paths through an open descriptor: what it names cannot be swapped
// between a check and a use, and the path fits sun_path whatever the
// directory's length.
std::string through(int fd, const std::string& name = {}) {
  return fmt::format("/proc/self/fd/{}{}{}", fd, name.empty() ? "" : "/", name);
}

sockaddr_un address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  return addr;
}

// Missing directories are made 0755: group members need to reach the socket.
Status make_directories(const fs::path& dir) {
  fs::path prefix;
  for (const fs::path& part : dir) {
    prefix /= part;
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return fail_errno("creating " + prefix.string());
  }
  return ok_status();
}

bool trusted_owner(const struct stat& st) { return st.st_uid == 0 || st.st_uid == geteuid(); }

// The directory the socket goes in, and each directory above it, as the
// kernel resolved them (symbolic links followed once, at open). Its own
// directory must be root's and writable by root alone: whoever else can
// write there can make or swap what histctl connects to. An ancestor may
// be writable by others when it is sticky (/tmp): they cannot rename or
// remove the root-owned directory below. A sticky socket directory is
// refused too: anyone could own the socket's name while histd is down and
// answer histctl in its place.
Status check_directories(int dir, const fs::path& socket_path) {
  char buf[PATH_MAX];
  const ssize_t n = readlink(through(dir).c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return fail_errno("resolving the directory of " + socket_path.string());
  const fs::path resolved(std::string(buf, static_cast<size_t>(n)));
  for (fs::path p = resolved;; p = p.parent_path()) {
    struct stat st {};
    if ((p == resolved ? fstat(dir, &st) : stat(p.c_str(), &st)) != 0) return fail_errno("checking " + p.string());
    const auto refuse = [&](const std::string& why) {
      return fail(ErrorKind::Invalid, EPERM,
                  fmt::format("refusing the control socket {}: {} {}", socket_path.string(), p.string(), why));
    };
    if (!trusted_owner(st)) return refuse(fmt::format("is owned by uid {}, not root", st.st_uid));
    const bool writable = st.st_mode & (S_IWGRP | S_IWOTH);
    if (writable && (p == resolved || !(st.st_mode & S_ISVTX)))
      return refuse(fmt::format("is writable by group or others (mode {:04o})", st.st_mode & 07777));
    if (p == p.parent_path()) break;
  }
  return ok_status();
}

const char* kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  return "not a socket";
}

// Whatever is at the socket's name: nothing, or a socket nobody listens on
// (a histd that died), which is removed. Anything else is someone's and
// stays.
Status clear_stale(int dir, const std::string& name, const fs::path& path) {
  struct stat st {};
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? ok_status() : fail_errno("checking " + path.string());
  if (!S_ISSOCK(st.st_mode))
    return fail(
        ErrorKind::Exists, EEXIST,
        fmt::format("{} exists and is {}: histd replaces only a stale socket", path.string(), kind(st.st_mode)));
  Fd node(openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  Fd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!node || !probe) return fail_errno("probing " + path.string());
  const sockaddr_un addr = address(through(node.get()));
  // A full backlog (EAGAIN) is someone listening too.
  if (connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0 || errno == EAGAIN)
    return fail(ErrorKind::Busy, EADDRINUSE, fmt::format("{} is live: another histd listens there", path.string()));
  if (errno != ECONNREFUSED) return fail_errno("probing " + path.string());
  if (unlinkat(dir, name.c_str(), 0) != 0) return fail_errno("removing the stale socket " + path.string());
  return ok_status();
}

// A private directory next to the socket's name, to bind in: the socket
// gets its final owner and mode there, unreachable by others, before it
// takes its name.
Expected<std::string> make_private_dir(int dir) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    uint32_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != sizeof(r)) return fail_errno("getrandom");
    std::string name = fmt::format(".histd-bind-{:08x}", r);
    if (mkdirat(dir, name.c_str(), 0700) == 0) return name;
    if (errno != EEXIST) return fail_errno("creating a directory to bind the control socket in");
  }
  return fail(ErrorKind::Exists, EEXIST, "no free name to bind the control socket in");
}

// Binds, owns, modes and listens in `tmp` (inside `dir`), then renames the
// socket to `name`, never over anything.
Status bind_in(int dir, const std::string& tmp, const std::string& name, int listen_fd, gid_t group, int backlog,
               const fs::path& path) {
  Fd private_dir(openat(dir, tmp.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!private_dir) return fail_errno("opening the directory to bind the control socket in");
  const sockaddr_un addr = address(through(private_dir.get(), "s"));
  if (bind(listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
    return fail_errno("binding " + path.string());
  if (fchownat(private_dir.get(), "s", static_cast<uid_t>(-1), group ? group : getegid(), AT_SYMLINK_NOFOLLOW) != 0)
    return fail_errno("giving " + path.string() + " its group");
  if (fchmodat(private_dir.get(), "s", group ? 0660 : 0600, 0) != 0) return fail_errno("chmod " + path.string());
  if (listen(listen_fd, backlog) != 0) return fail_errno("listen");
  if (renameat2(private_dir.get(), "s", dir, name.c_str(), RENAME_NOREPLACE) != 0)
    return fail_errno("moving the control socket to " + path.string());
  return ok_status();
}

}  // namespace

Expected<std::unique_ptr<SocketFile>> SocketFile::create(const fs::path& path, gid_t group, int backlog) {
  if (path.string().size() >= sizeof(sockaddr_un{}.sun_path))
    return fail(ErrorKind::Invalid, ENAMETOOLONG, "socket path too long: " + path.string());
  if (!path.has_filename()) return fail(ErrorKind::Invalid, EINVAL, "socket path names a directory: " + path.string());
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  HISTD_TRY(make_directories(parent));
  std::unique_ptr<SocketFile> s(new SocketFile());
  s->name_ = path.filename().string();
  s->dir_ = Fd(open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!s->dir_) return fail_errno("opening " + parent.string());
  HISTD_TRY(check_directories(s->dir_.get(), path));
  HISTD_TRY(clear_stale(s->dir_.get(), s->name_, path));
  s->listen_ = Fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s->listen_) return fail_errno("socket");
  const std::string tmp = HISTD_TRY(make_private_dir(s->dir_.get()));
  Status st = bind_in(s->dir_.get(), tmp, s->name_, s->listen_.get(), group, backlog, path);
  unlinkat(s->dir_.get(), (tmp + "/s").c_str(), 0);  // left only when a step failed
  unlinkat(s->dir_.get(), tmp.c_str(), AT_REMOVEDIR);
  if (!st) return unexpected(std::move(st).error());
  struct stat sst {};
  if (fstatat(s->dir_.get(), s->name_.c_str(), &sst, AT_SYMLINK_NOFOLLOW) != 0)
    return fail_errno("checking " + path.string());
  s->dev_ = sst.st_dev;
  s->ino_ = sst.st_ino;
  return s;
}

SocketFile::~SocketFile() {
  if (!dir_ || ino_ == 0) return;
  struct stat st {};
  if (fstatat(dir_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    unlinkat(dir_.get(), name_.c_str(), 0);
}

}  // namespace histd::control
