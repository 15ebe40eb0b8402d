// SPDX-License-Identifier: GPL-2.0-only
// What open hist and hist.json files hold. Each open file serves the text
// made when it was opened (as a seq_file does), and open files share it:
// opens of the same file for the same kind of reader (shown kernel
// addresses or not) while the event's version (engine::Engine::version) is
// unchanged share one immutable text, rendered once. When the texts open
// files pin together pass `cap` bytes, a new open shares the newest text of
// that file even if the table changed since: a little older, never more
// memory. So open readers pin at most `cap` plus one text per file and kind
// of reader, whatever their number (docs/design/tree.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "fs/nodes.h"
#include "histd/engine.h"
#include "histd/render.h"
#include "histd/result.h"

namespace histd::fs {

using Text = std::shared_ptr<const std::string>;

struct Rendering {
  Text text;
  // The event's version at the open (what poll() compares with), even when
  // `text` is an older one shared over the cap: a poller then waits for
  // the next change rather than spinning on the text it has.
  uint64_t version = 0;
};

class Renderings {
 public:
  // The engines (the top tree's, an instance's) come from `ns`.
  Renderings(const Namespace& ns, size_t cap);
  // The text of `n` (hist or hist.json) for a reader shown `options`.
  // Concurrent opens of one file wait for one rendering and share it.
  Expected<Rendering> open(const Node& n, const render::Options& options);
  // Bytes of the texts alive (held by open files, each counted once).
  size_t pinned() const { return *pinned_; }

 private:
  struct Key {
    std::string instance;
    std::string system;
    std::string event;
    std::string file;  // hist, hist.json
    bool hide = false;
    auto operator<=>(const Key&) const = default;
  };
  struct Slot {
    std::mutex rendering;  // held while this file is rendered
    uint64_t version = 0;  // of the event when `text` was rendered
    std::weak_ptr<const std::string> text;
  };
  Text share(std::string text);

  const Namespace* ns_;
  size_t cap_;
  std::shared_ptr<std::atomic<size_t>> pinned_;  // outlives the tree in the deleters of texts
  std::mutex mu_;
  std::map<Key, std::shared_ptr<Slot>> slots_;
};

}  // namespace histd::fs
