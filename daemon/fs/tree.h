// SPDX-License-Identifier: GPL-2.0-only
// The tracefs-shaped FUSE tree histd mounts:
//   <mount>/README available_events error_log synthetic_events trace
//           trace_pipe trace_marker snapshot
//           events/<system>/<event>/{format,id,trigger,hist,hist.json,hist_debug}
//           instances/<name>/ (mkdir, rmdir: histd/instances.h)
// Every file is generated on open (like a seq_file) and served with
// direct_io, so sizes read as 0 as in tracefs. Writes go to the engine.
// Served with libfuse's low-level API: no request holds a worker thread
// while it waits (a trace_pipe read without lines is parked, TracePipe).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "histd/engine.h"
#include "histd/instances.h"
#include "histd/result.h"

struct fuse_session;

namespace histd::fs {

class Tree {
 public:
  // Bytes of hist/hist.json texts open files may pin before new opens share
  // the newest text of their file (Renderings).
  static constexpr size_t kReaderMemory = size_t{32} << 20;

  // Mounts at `mountpoint`. The engine must outlive the tree. Only root, or
  // members of `group` (0: nobody but root), may read or write the tree;
  // the group's readers are shown kernel addresses as the kernel's
  // kptr_restrict decides for them.
  // `instances` (null: the tree has no instances/) must outlive it too.
  static Expected<std::unique_ptr<Tree>> mount(engine::Engine& engine, const std::filesystem::path& mountpoint,
                                               gid_t group = 0, instances::Instances* instances = nullptr);
  ~Tree();
  // Serves requests until unmounted or a SIGINT/SIGTERM (or a SIGHUP the
  // caller has no handler of its own for) arrives;
  // then answers the trace_pipe reads still waiting (end of file).
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
  struct fuse_session* session_ = nullptr;
  bool mounted_ = false;
  std::filesystem::path mountpoint_;
  int mount_id_ = -1;  // in /proc/self/mountinfo
};

}  // namespace histd::fs
