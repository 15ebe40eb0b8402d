// SPDX-License-Identifier: GPL-2.0-only
// The control socket's file. histd runs as root and histctl trusts what
// answers at the path, so the file is made where nobody but root can have
// put anything or can change it, and it is never open to more users than
// its final mode says.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>

#include "histd/fd.h"
#include "histd/result.h"

namespace histd::control {

class SocketFile {
 public:
  // Listens at `path` with mode 0600 root:root, or 0660 root:`group` (gid
  // not 0). Refused, touching nothing: a directory not owned by root or
  // writable by group or others, an ancestor directory others may change
  // (writable and not sticky), and anything at `path` but a stale socket
  // (S_ISSOCK, and connect() is refused), which is removed. A live socket
  // (another histd) is EADDRINUSE; a file, link or directory EEXIST.
  static Expected<std::unique_ptr<SocketFile>> create(const std::filesystem::path& path, gid_t group, int backlog);
  // Removes the file if it is still this socket's.
  ~SocketFile();
  SocketFile(const SocketFile&) = delete;
  SocketFile& operator=(const SocketFile&) = delete;

  int fd() const { return listen_.get(); }

 private:
  SocketFile() = default;

  Fd dir_;  // the checked directory, for every later *at() call
  Fd listen_;
  std::string name_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace histd::control
