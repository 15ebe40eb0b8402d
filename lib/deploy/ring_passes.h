// SPDX-License-Identifier: GPL-2.0-only
// Readers of `trace` and `snapshot` meet every record committed before
// their read, as in tracefs, where an event is written to the buffer by the
// task that hit it. Here records reach the buffers through the ring's
// consumer thread, a moment later: a reader asks for a pass of that thread
// and waits until a pass begun after its request has delivered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "histd/fd.h"

namespace histd::deploy {

class RingPasses {
 public:
  RingPasses();

  // Readable when a reader asked for a pass: the consumer polls it beside
  // the ring.
  int wake_fd() const { return wake_.get(); }

  // Reader: returns once a pass begun after this call has ended, when no
  // consumer runs, or after `timeout` (a reader is never held longer).
  void await_pass(std::chrono::milliseconds timeout);

  // Consumer: running() around its loop; begin() before it takes what the
  // ring holds, returning the requests that pass serves; end() after it
  // delivered them.
  void running(bool on);
  // Wakes the consumer without asking for a pass (it is to stop).
  void interrupt();
  uint64_t begin();
  void end(uint64_t served);

 private:
  Fd wake_;  // an eventfd
  std::mutex mu_;
  std::condition_variable done_;
  uint64_t requested_ = 0;
  uint64_t served_ = 0;
  bool running_ = false;
};

}  // namespace histd::deploy
