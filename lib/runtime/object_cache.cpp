// SPDX-License-Identifier: GPL-2.0-only
#include "runtime/object_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "histd/digest.h"
#include "histd/runtime.h"

namespace histd::runtime {

namespace {

namespace fs = std::filesystem;

// Histd's own, and writable by it alone: what a file or directory of the
// cache must be before histd believes it.
bool owned_and_private(const struct stat& st) {
  return st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

enum class Read { Ok, Missing, Refused };

// A cache file's bytes. Missing: not there. Refused: a symlink (O_NOFOLLOW:
// ELOOP), not a regular file, not histd's, writable by others, unreadable.
Read read_private(const fs::path& p, std::string& out, std::string& why) {
  Fd fd(open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return Read::Missing;
    why = errno == ELOOP ? "a symbolic link" : std::strerror(errno);
    return Read::Refused;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
    return Read::Refused;
  }
  if (!owned_and_private(st)) {
    why = fmt::format("owned by uid {} with mode {:04o}", st.st_uid, st.st_mode & 07777);
    return Read::Refused;
  }
  out.clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      return Read::Refused;
    }
    if (n == 0) return Read::Ok;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Written under a temporary name that is created afresh (whatever is at it,
// a symlink included, is unlinked and never followed), then renamed over
// the final name: a reader sees the old file or the whole new one.
bool write_private(const fs::path& p, const std::string& data) {
  const std::string tmp = p.string() + ".tmp";
  unlink(tmp.c_str());
  Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return false;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  fd = Fd();
  if (done != data.size() || rename(tmp.c_str(), p.c_str()) != 0) {
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

fs::path ObjectCache::path(const std::string& name, const char* ext) const { return dir_ / (name + ext); }

bool ObjectCache::dir_usable() const {
  struct stat st {};
  return lstat(dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && owned_and_private(st);
}

std::optional<std::string> ObjectCache::find(const std::string& name, const std::string& text) const {
  if (!enabled() || !dir_usable()) return std::nullopt;
  std::string source, sum, object, why;
  const fs::path obj = path(name, ".o");
  // The source first: another unit under the same name is a plain miss
  // (the store after the compile replaces the entry).
  Read r = read_private(path(name, ".c"), source, why);
  if (r == Read::Missing || (r == Read::Ok && source != text)) return std::nullopt;
  if (r == Read::Ok) r = read_private(path(name, ".sha256"), sum, why);
  if (r == Read::Ok) r = read_private(obj, object, why);
  if (r == Read::Missing) return std::nullopt;
  if (r == Read::Ok) {
    if (sum == sha256_hex(object) + "\n") return object;
    why = "its content does not match the SHA-256 recorded when histd wrote it";
  }
  fmt::print(stderr, "histd: refusing the cached object {} ({}): removed, the unit is compiled again\n", obj.string(),
             why);
  evict(name);
  return std::nullopt;
}

void ObjectCache::store(const std::string& name, const std::string& text, const std::string& object) const {
  if (!enabled()) return;
  if (mkdir(dir_.c_str(), 0700) != 0 && errno == ENOENT) {
    std::error_code ec;
    fs::create_directories(dir_.parent_path(), ec);
    mkdir(dir_.c_str(), 0700);
  }
  if (!dir_usable()) return;
  // The object last: an entry without it is a miss, never a wrong hit.
  if (!write_private(path(name, ".c"), text) || !write_private(path(name, ".sha256"), sha256_hex(object) + "\n") ||
      !write_private(path(name, ".o"), object))
    evict(name);
}

void ObjectCache::evict(const std::string& name) const {
  if (!enabled()) return;
  for (const char* ext : {".o", ".sha256", ".c"}) unlink(path(name, ext).c_str());
}

}  // namespace histd::runtime
