// SPDX-License-Identifier: GPL-2.0-only
// The tree's state, shared by its low-level FUSE operations (ops_*.cpp).
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "fs/fuse_ll.h"
#include "fs/inodes.h"
#include "fs/nodes.h"
#include "fs/raw_splice.h"
#include "fs/renderings.h"
#include "fs/trace_pipe.h"
#include "fs/tree.h"
#include "histd/engine.h"
#include "histd/render.h"
#include "histd/runtime.h"

namespace histd::fs {

// An open file: its content made at open time (hist and hist.json shared
// between readers, see Renderings).
struct OpenFile {
  Text content;             // null for write-only opens and trace_pipe
  uint64_t version = 0;     // hist files: the event's version of `content`
  bool pipe = false;        // trace_pipe: each read takes lines out of the buffer
  int cpu = -1;             // per_cpu/cpuN/trace_pipe, trace_pipe_raw: N
  bool raw = false;         // trace_pipe_raw: pages, not lines
  Leftover rest;            // trace_pipe_raw: what the last read had no room for
  render::Options options;  // how this reader is shown kernel addresses
  std::string instance;     // whose file ("": the top tree's); an open file keeps its instance (rmdir: EBUSY)
  // trace_pipe_raw: what its polls gave the page cache for splice.
  std::unique_ptr<RawSplice> splice;
};

// A poll() waiting for an event's tables to change.
struct Waiter {
  std::string instance;
  std::string system;
  std::string event;
  uint64_t version = 0;
  struct fuse_pollhandle* handle = nullptr;
};

// A poll() of trace_pipe_raw waiting for a full page of its CPU.
struct RawWaiter {
  std::string instance;
  uint32_t cpu = 0;
  struct fuse_pollhandle* handle = nullptr;
};

// A pipe besides the top tree's trace_pipe (an instance's, or a CPU's),
// made at its first read.
struct InstancePipe {
  std::shared_ptr<engine::Engine> engine;  // outlives the pipe
  std::unique_ptr<TracePipe> pipe;
};
// Which: the instance ("": the top tree), the CPU (-1: all), raw pages.
using PipeKey = std::tuple<std::string, int, bool>;

// What a pipe of `engine` reads: its trace_pipe's lines (cpu -1), one
// CPU's lines, or one CPU's raw pages.
TracePipe::Source pipe_source(engine::Engine& engine, int cpu, bool raw);

struct Tree::Context {
  Context(engine::Engine& engine, instances::Instances* instances, gid_t group_, size_t reader_memory)
      : ns(engine, instances), group(group_), renderings(ns, reader_memory), pipe(pipe_source(engine, -1, false)) {}

  Namespace ns;
  struct fuse_session* session = nullptr;  // what notifications go to
  gid_t group = 0;                         // may read, and change triggers, besides root
  // Every file's and directory's times: when the tree was mounted (tracefs
  // dates its files from its own mount; never 1970).
  const struct timespec mounted = [] {
    struct timespec ts {};
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts;
  }();
  InodeTable inodes;
  Renderings renderings;
  TracePipe pipe;  // the top tree's
  // A trace_marker writer's pid as the kernel's records show it: FUSE
  // names the writer in histd's PID namespace (a container's, say).
  runtime::HostPids host_pids;
  // Instances: the files open in each (rmdir waits for none, EBUSY as
  // tracefs) and their trace_pipes. Held while an instance is removed, so
  // no file of it opens meanwhile.
  std::mutex instances_mu;
  std::map<std::string, size_t> open_files;
  std::map<PipeKey, InstancePipe> instance_pipes;
  bool pipes_started = false;  // after run(): a new pipe starts its thread
  std::mutex waiters_mu;
  std::vector<Waiter> waiters;
  // One a file (a new poll's handle replaces the last: the kernel wakes
  // every poller of the file by either), dropped at its release.
  std::map<const OpenFile*, RawWaiter> raw_waiters;
  // trace_pipe_raw: the files open on each inode, of which the first alone
  // stores pages for splice (RawSplice).
  std::mutex raw_mu;
  std::map<fuse_ino_t, size_t> raw_opens;
  // Told (under waiters_mu) when a waiter or a trim comes, or the watcher
  // is to stop: with neither to watch, the watcher sleeps without a timer.
  std::condition_variable watch_cv;
  // When to hand freed heap back to the kernel (steady-clock ns, 0: nothing
  // to hand back): the allocator keeps what a big read freed, so that the
  // next read does not fault it all in again (see histd's main), until reads
  // have stopped for a while.
  std::atomic<int64_t> trim_at{0};
  // Freed heap handed back a few seconds from now (a big read released, an
  // instance removed), unless more comes first.
  void trim_soon();

  // The node an inode names now (Kind::None once it is gone).
  Node node_of(fuse_ino_t ino) const;
  // The pipe an open file reads (trace_pipe, per_cpu/cpuN/trace_pipe or
  // trace_pipe_raw, of the top tree or an instance); null once its
  // instance is removed.
  TracePipe* pipe_of(const OpenFile& file);
  // An open (or release) of a file of `instance`; false if it is gone.
  bool opened(const std::string& instance);
  void released(const std::string& instance);
  // An open (or release) of trace_pipe_raw's inode `ino`; whether it is
  // its only open file.
  bool raw_opened(fuse_ino_t ino);
  void raw_released(fuse_ino_t ino);
  // rmdir instances/<name>: EBUSY while a file of it is open.
  int remove_instance(const std::string& name);
  // The pipes' threads (run()) and, at the end, every parked read answered.
  void start_pipes();
  void stop_pipes();
  // st_mode, st_nlink, owner (root, group) of `n`, numbered `ino`.
  void fill_stat(const Node& n, fuse_ino_t ino, struct stat* st) const;
};

inline Tree::Context& context_of(fuse_req_t req) { return *static_cast<Tree::Context*>(fuse_req_userdata(req)); }

// Answers a lookup (or mkdir) of `path`, which names `n`, with a new
// reference to its inode.
void reply_entry(fuse_req_t req, Tree::Context& ctx, const Node& n, const std::string& path);

// The operations, by file (each adds its own to `ops`).
void add_entry_ops(fuse_lowlevel_ops& ops);
void add_file_ops(fuse_lowlevel_ops& ops);
void add_refusal_ops(fuse_lowlevel_ops& ops);
void add_instance_ops(fuse_lowlevel_ops& ops);

// trace_pipe_raw (RawSplice): answers a poll() of `file` (`ph`: the
// kernel's handle, kept to wake it when a full page comes), and forgets
// the file at its release.
void poll_raw(fuse_req_t req, Tree::Context& ctx, OpenFile& file, struct fuse_pollhandle* ph);
void release_raw(Tree::Context& ctx, fuse_ino_t ino, OpenFile& file);

// Truncating a writable file (O_TRUNC or truncate(2)) for user `uid`, as
// tracefs does; a negative errno on failure.
int truncate_file(Tree::Context& ctx, const Node& n, uid_t uid);

}  // namespace histd::fs
