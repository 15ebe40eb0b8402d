// SPDX-License-Identifier: GPL-2.0-only
// trace_pipe reads that wait without holding a FUSE worker. A read that
// finds no lines is parked: its request is kept and answered later by the
// pipe's own thread when lines arrive, by libfuse's interrupt callback when
// the reader gets a signal (EINTR: Ctrl-C and kill end it at once), or at
// shutdown (end of file). The workers only ever answer at once, so any
// number of blocked readers leaves the tree, its interrupts and SIGTERM
// working.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fs/fuse_ll.h"
#include "histd/engine.h"
#include "histd/render.h"

namespace histd::fs {

// What a read of trace_pipe_raw had no room for, kept by its open file for
// its next read (as the rest of a page in the kernel), which poll() asks
// about from another worker: locked.
class Leftover {
 public:
  bool empty() const;
  std::string take();            // all of it; empty after
  void keep(std::string bytes);  // after what is there
 private:
  mutable std::mutex mu_;
  std::string bytes_;
};

class TracePipe {
 public:
  // What a read takes out: up to `max_bytes` (at least one whole line or
  // page, even a longer one), or nullopt when there is nothing now
  // (`last_try`: a non-blocking reader would be told so). Each pipe reads
  // one source: trace_pipe's lines, one CPU's lines
  // (per_cpu/cpuN/trace_pipe) or one CPU's raw pages (trace_pipe_raw).
  using Source =
      std::function<std::optional<std::string>(size_t max_bytes, const render::Options& options, bool last_try)>;
  explicit TracePipe(Source source);
  ~TracePipe();
  TracePipe(const TracePipe&) = delete;
  TracePipe& operator=(const TracePipe&) = delete;

  // Starts the thread that answers parked reads.
  void start();
  // Answers a read of up to `size` bytes: the lines there are, EAGAIN for a
  // non-blocking reader, or later (parked). `rest` (null: cut and dropped,
  // as trace_pipe does a line): where what the read had no room for waits
  // for the reader's next read, as the rest of a page of trace_pipe_raw
  // does in the kernel; owned by the open file, which outlives its reads.
  void read(fuse_req_t req, size_t size, bool nonblock, const render::Options& options, Leftover* rest = nullptr);
  // Stops the thread and answers every parked read with end of file; later
  // reads get end of file at once.
  void stop();
  size_t parked() const;

 private:
  struct Parked {
    fuse_req_t req;
    size_t size;
    render::Options options;
    Leftover* rest;
  };
  static void on_interrupt(fuse_req_t req, void* self);
  void serve();

  const Source source_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Parked> parked_;  // oldest first: lines go to the reader that waited longest
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace histd::fs
