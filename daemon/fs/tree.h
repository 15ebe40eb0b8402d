// The tracefs-shaped FUSE tree histd mounts:
//   <mount>/README available_events error_log
//           events/<system>/<event>/{format,id,trigger,hist}
// Every file is generated on open (like a seq_file) and served with
// direct_io, so sizes read as 0 as in tracefs. Writes go to the engine.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <memory>

#include "histd/engine.h"
#include "histd/result.h"

struct fuse;

namespace histd::fs {

class Tree {
 public:
  // Mounts at `mountpoint`. The engine must outlive the tree. Members of
  // `group` (0: nobody but root) may write trigger files.
  static Expected<std::unique_ptr<Tree>> mount(engine::Engine& engine, const std::filesystem::path& mountpoint,
                                               gid_t group = 0);
  ~Tree();
  // Serves requests until unmounted or a SIGINT/SIGTERM/SIGHUP arrives.
  int run();

  struct Context;

 private:
  Tree() = default;
  void watch_pollers();
  std::unique_ptr<Context> ctx_;
  std::atomic<bool> stop_watch_{false};
  struct fuse* fuse_ = nullptr;
};

}  // namespace histd::fs
