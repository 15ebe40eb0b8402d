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
#include <mutex>
#include <thread>

#include "fs/fuse_ll.h"
#include "histd/engine.h"
#include "histd/render.h"

namespace histd::fs {

class TracePipe {
 public:
  explicit TracePipe(engine::Engine& engine);
  ~TracePipe();
  TracePipe(const TracePipe&) = delete;
  TracePipe& operator=(const TracePipe&) = delete;

  // Starts the thread that answers parked reads.
  void start();
  // Answers a read of up to `size` bytes: the lines there are, EAGAIN for a
  // non-blocking reader, or later (parked).
  void read(fuse_req_t req, size_t size, bool nonblock, const render::Options& options);
  // Stops the thread and answers every parked read with end of file; later
  // reads get end of file at once.
  void stop();
  size_t parked() const;

 private:
  struct Parked {
    fuse_req_t req;
    size_t size;
    render::Options options;
  };
  static void on_interrupt(fuse_req_t req, void* self);
  void serve();

  engine::Engine& engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Parked> parked_;  // oldest first: lines go to the reader that waited longest
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace histd::fs
