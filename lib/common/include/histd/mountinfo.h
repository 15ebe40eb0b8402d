// SPDX-License-Identifier: GPL-2.0-only
// Reading /proc/self/mountinfo: what is mounted at a path.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace histd {

struct MountEntry {
  int id = -1;         // the mount's id (reused by the kernel once it is gone)
  std::string fstype;  // "fuse.histd", "tmpfs", ...
};

// The mounts stacked at `point`, lowest first (the last one is what a path
// lookup sees). Empty when nothing is mounted there or mountinfo cannot be read.
std::vector<MountEntry> mounts_at(const std::filesystem::path& point);

}  // namespace histd
