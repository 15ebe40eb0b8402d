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
#include <string>

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
  // Whether the mount made by mount() is still in this mount namespace:
  // false once it was unmounted under histd (umount, umount -l), which
  // ends the FUSE session and run(). Reads /proc/self/mountinfo, never the
  // tree itself (that would wait on histd's own, stopped, loop).
  bool still_mounted() const;

  struct Context;

 private:
  Tree() = default;
  void watch_pollers();
  std::unique_ptr<Context> ctx_;
  std::atomic<bool> stop_watch_{false};
  struct fuse* fuse_ = nullptr;
  std::filesystem::path mountpoint_;
  int mount_id_ = -1;  // in /proc/self/mountinfo
};

}  // namespace histd::fs
