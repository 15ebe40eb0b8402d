// SPDX-License-Identifier: GPL-2.0-only
#include "fs/inodes.h"

namespace histd::fs {

InodeTable::InodeTable() {
  by_ino_[kRoot] = Entry{"/", 1};
  by_path_["/"] = kRoot;
}

uint64_t InodeTable::lookup(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = by_path_.find(path);
  if (it != by_path_.end()) {
    ++by_ino_[it->second].lookups;
    return it->second;
  }
  const uint64_t ino = next_++;
  by_ino_[ino] = Entry{path, 1};
  by_path_[path] = ino;
  return ino;
}

void InodeTable::forget(uint64_t ino, uint64_t n) {
  if (ino == kRoot) return;
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return;
  if (it->second.lookups > n) {
    it->second.lookups -= n;
    return;
  }
  by_path_.erase(it->second.path);
  by_ino_.erase(it);
}

std::optional<std::string> InodeTable::path(uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return std::nullopt;
  return it->second.path;
}

std::string InodeTable::child(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

size_t InodeTable::size() const {
  std::lock_guard lock(mu_);
  return by_ino_.size();
}

}  // namespace histd::fs
