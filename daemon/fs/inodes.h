// SPDX-License-Identifier: GPL-2.0-only
// The low-level FUSE API names files by inode number: the tree hands out a
// number per path at lookup and drops it when the kernel forgets it. The
// paths are resolved again at every request (the tree is synthetic and
// changes under its readers: synthetic events, probe events come and go).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace histd::fs {

class InodeTable {
 public:
  static constexpr uint64_t kRoot = 1;  // FUSE_ROOT_ID, the path "/"

  InodeTable();
  // The number of `path` ("/events/sched"), counting one more kernel
  // reference to it. Numbers are never reused: a path forgotten and looked
  // up again gets a new one.
  uint64_t lookup(const std::string& path);
  // The kernel dropped `n` references (FUSE forget); at zero the number goes.
  void forget(uint64_t ino, uint64_t n);
  std::optional<std::string> path(uint64_t ino) const;
  // "/events" + "/" + "sched": the path of `name` in directory `dir`.
  static std::string child(const std::string& dir, const std::string& name);
  size_t size() const;

 private:
  struct Entry {
    std::string path;
    uint64_t lookups = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> by_ino_;
  std::unordered_map<std::string, uint64_t> by_path_;
  uint64_t next_ = kRoot + 1;
};

}  // namespace histd::fs
