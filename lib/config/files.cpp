// SPDX-License-Identifier: GPL-2.0-only
// Reading the configuration directory. histd runs as root and compiles what
// these files declare into BPF programs, and echoes a line it cannot parse:
// like the state directory, the directory, each directory above it and its
// files must be histd's user's (or root's) and writable by no one else,
// and a file is never followed out of the directory by a symbolic link,
// else they are not read.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "histd/config.h"
#include "histd/fd.h"

namespace histd::config {

namespace {

// Far more than any configuration: a file this big is a mistake.
constexpr off_t kMaxFileBytes = off_t{4} << 20;

Problem file_problem(const std::string& path, std::string why) {
  Problem p;
  p.origin = Origin{path, 0};
  p.diagnostic = Diagnostic{ErrorCode::ConfigFile, Span{0, 0}, {}, std::move(why)};
  return p;
}

// What makes a file or directory untrusted: another owner, or a mode that
// lets someone else change it. "" when trusted.
std::string untrusted(const struct stat& st) {
  if (st.st_uid != 0 && st.st_uid != geteuid())
    return fmt::format("owned by uid {}, not by root: anyone who can write it could have histd compile it", st.st_uid);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("writable by {} (mode {:o}): anyone who can write it could have histd compile it",
                       st.st_mode & S_IWOTH ? "others" : "its group", st.st_mode & 07777);
  return {};
}

// A configuration file, not an editor's backup or a package manager's
// leftover: "*.conf", not hidden.
bool is_config_name(std::string_view name) { return name.size() > 5 && name.front() != '.' && name.ends_with(".conf"); }

// Each directory from the root down to `path` (as given, and as it
// resolves): owned by root or histd's user and writable by no one else
// unless sticky (as /tmp: others may not rename what is root's there), so
// that no one else can swap the directory for another. "" when trusted.
std::string swappable_ancestor(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  for (const std::filesystem::path& p : {path, real}) {
    if (p.empty() || !p.is_absolute()) continue;
    std::filesystem::path at;
    for (const auto& part : p.parent_path()) {
      at /= part;
      struct stat st {};
      if (lstat(at.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;  // a link: its target is `real`'s
      const bool others_write = st.st_mode & (S_IWGRP | S_IWOTH);
      if ((st.st_uid != 0 && st.st_uid != geteuid()) || (others_write && !(st.st_mode & S_ISVTX)))
        return fmt::format("{} (owner uid {}, mode {:o}) lets someone else replace it", at.string(), st.st_uid,
                           st.st_mode & 07777);
    }
  }
  return {};
}

// A file of the directory (`dir_fd`), not followed out of it: a symbolic
// link is read only when it resolves inside the directory. -1 and `why`
// when it is not read.
int open_inside(int dir_fd, const std::filesystem::path& dir, const std::string& name, std::string& why) {
  const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd >= 0 || errno != ELOOP) {
    if (fd < 0) why = std::strerror(errno);
    return fd;
  }
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(dir / name, ec);
  const std::filesystem::path inside = std::filesystem::canonical(dir, ec);
  const std::string prefix = inside.string() + "/";
  if (ec || target.empty() || !target.string().starts_with(prefix)) {
    why = "a symbolic link out of the directory: not read";
    return -1;
  }
  const int linked = open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (linked < 0) why = std::strerror(errno);
  return linked;
}

std::optional<DirFile> read_file(int dir_fd, const std::filesystem::path& dir, const std::string& name,
                                 std::vector<Problem>& problems) {
  const std::string path = (dir / name).string();
  // Opened once and checked through the fd: what is checked is what is read.
  std::string why;
  Fd fd(open_inside(dir_fd, dir, name, why));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    problems.push_back(file_problem(path, why.empty() ? std::strerror(errno) : why));
    return std::nullopt;
  }
  why = !S_ISREG(st.st_mode) ? "not a regular file" : untrusted(st);
  if (why.empty() && st.st_size > kMaxFileBytes) why = fmt::format("{} bytes, more than {}", st.st_size, kMaxFileBytes);
  if (!why.empty()) {
    problems.push_back(file_problem(path, why));
    return std::nullopt;
  }
  DirFile f{path, {}};
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      problems.push_back(file_problem(path, std::strerror(errno)));
      return std::nullopt;
    }
    f.text.append(buf, static_cast<size_t>(n));
  }
  return f;
}

}  // namespace

std::vector<DirFile> read_dir(const std::filesystem::path& dir, std::vector<Problem>& problems) {
  std::vector<DirFile> files;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    // No directory: nothing is declared (the packaged default may be absent).
    if (errno != ENOENT) problems.push_back(file_problem(dir.string(), std::strerror(errno)));
    return files;
  }
  struct stat st {};
  std::string why = fstat(dirfd(d), &st) != 0 ? std::strerror(errno) : untrusted(st);
  if (why.empty()) why = swappable_ancestor(dir);
  if (!why.empty()) {
    problems.push_back(file_problem(dir.string(), why));
    closedir(d);
    return files;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (is_config_name(e->d_name)) names.push_back(e->d_name);
  // Lexical order of the bytes, whatever the locale: 10-a.conf before 20-b.conf.
  std::sort(names.begin(), names.end());
  for (const std::string& name : names)
    if (auto f = read_file(dirfd(d), dir, name, problems)) files.push_back(std::move(*f));
  closedir(d);
  return files;
}

}  // namespace histd::config
