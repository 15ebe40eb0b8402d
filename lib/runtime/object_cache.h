// SPDX-License-Identifier: GPL-2.0-only
// The compiled-object cache (<state-dir>/cache). histd runs as root and
// loads what it finds there into the kernel, so nothing in it is taken on
// trust: an entry is "<name>.c" (the text the object was built from),
// "<name>.sha256" (the object's SHA-256, recorded when histd wrote it) and
// "<name>.o". Every file is opened with O_NOFOLLOW and must be a regular
// file of histd's user that no one else may write; an object whose bytes do
// not hash to what was recorded is evicted, and the unit compiled again.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace histd::runtime {

class ObjectCache {
 public:
  // An empty `dir` disables the cache. The directory is made (0700) at the
  // first store if missing; one that is a symlink, not histd's user's or
  // writable by others is not used.
  explicit ObjectCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  bool enabled() const { return !dir_.empty(); }

  // The object stored under `name` for exactly `text`, verified; nullopt on
  // a miss. An entry that fails verification is evicted (said on stderr).
  std::optional<std::string> find(const std::string& name, const std::string& text) const;
  // Best effort: a full or read-only directory only costs the cache, and
  // leaves no partial entry behind.
  void store(const std::string& name, const std::string& text, const std::string& object) const;
  void evict(const std::string& name) const;

 private:
  std::filesystem::path path(const std::string& name, const char* ext) const;
  bool dir_usable() const;
  std::filesystem::path dir_;
};

}  // namespace histd::runtime
