// SPDX-License-Identifier: GPL-2.0-only
#include "histd/mountinfo.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace histd {

namespace {

// Mount points in /proc/self/mountinfo escape space, tab, newline and
// backslash as octal.
std::string mountinfo_escape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\')
      out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

}  // namespace

std::vector<MountEntry> mounts_at(const std::filesystem::path& point) {
  std::ifstream in("/proc/self/mountinfo");
  const std::string want = mountinfo_escape(point.string());
  std::vector<MountEntry> out;
  std::string line;
  while (std::getline(in, line)) {
    // "<id> <parent> <major:minor> <root> <mount point> <options> [tags] - <fstype> ..."
    std::istringstream fields(line);
    MountEntry e;
    std::string parent, dev, root, mount_point;
    fields >> e.id >> parent >> dev >> root >> mount_point;
    const size_t sep = line.find(" - ");
    if (!fields || mount_point != want || sep == std::string::npos) continue;
    std::istringstream rest(line.substr(sep + 3));
    rest >> e.fstype;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace histd
