// Reading the configuration directory. histd runs as root and compiles what
// these files declare into BPF programs: like the state directory, the
// directory and its files must be histd's user's (or root's) and writable
// by no one else, else they are not read.
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
bool is_config_name(std::string_view name) {
  return name.size() > 5 && name.front() != '.' && name.ends_with(".conf");
}

std::optional<DirFile> read_file(const std::string& path, std::vector<Problem>& problems) {
  // Opened once and checked through the fd: what is checked is what is read.
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    problems.push_back(file_problem(path, std::strerror(errno)));
    return std::nullopt;
  }
  std::string why = !S_ISREG(st.st_mode) ? "not a regular file" : untrusted(st);
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
  if (fstat(dirfd(d), &st) != 0 || !untrusted(st).empty()) {
    problems.push_back(file_problem(dir.string(), untrusted(st)));
    closedir(d);
    return files;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (is_config_name(e->d_name)) names.push_back(e->d_name);
  closedir(d);
  // Lexical order of the bytes, whatever the locale: 10-a.conf before 20-b.conf.
  std::sort(names.begin(), names.end());
  for (const std::string& name : names)
    if (auto f = read_file((dir / name).string(), problems)) files.push_back(std::move(*f));
  return files;
}

}  // namespace histd::config
