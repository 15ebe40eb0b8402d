// SPDX-License-Identifier: GPL-2.0-only
// The kernel's probe event files (kprobe_events, uprobe_events,
// dynamic_events): histd lists them and writes them through, and the kernel
// checks and makes the events; histd's programs compute their records like
// any tracepoint's (pipeline::probe_entry). Part of the deployer
// (histd/deploy.h). Not thread-safe: a write makes the catalog forget its
// probe events, and the catalog is the engine's, under the engine's lock.
#pragma once

#include <string>
#include <string_view>

#include "histd/catalog.h"
#include "histd/result.h"

namespace histd::deploy {

class ProbeFiles {
 public:
  // `catalog`: the tracefs whose files these are; it outlives them.
  explicit ProbeFiles(catalog::Catalog& catalog) : catalog_(catalog) {}

  // The kernel's listing of `file`.
  std::string probe_events(const std::string& file) const;
  // One write(2) to the kernel's file (with O_TRUNC: `truncate`): the kernel
  // checks and makes the events, histd's programs compute their records.
  // The kernel's errno and error_log reason on a refusal.
  Status write_probe_events(const std::string& file, std::string_view text, bool truncate);

 private:
  catalog::Catalog& catalog_;
};

}  // namespace histd::deploy
