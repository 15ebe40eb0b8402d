// SPDX-License-Identifier: GPL-2.0-only
#include "deploy/ring_passes.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace histd::deploy {

RingPasses::RingPasses() : wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void RingPasses::await_pass(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!running_ || !wake_) return;
  const uint64_t ticket = ++requested_;
  // Written under the lock: a pass that begins after this reads the ticket,
  // one that began before leaves the eventfd readable for the next.
  const uint64_t one = 1;
  if (write(wake_.get(), &one, sizeof(one)) != sizeof(one)) return;
  done_.wait_for(lock, timeout, [&] { return served_ >= ticket || !running_; });
}

void RingPasses::interrupt() {
  const uint64_t one = 1;
  if (wake_) (void)!write(wake_.get(), &one, sizeof(one));
}

void RingPasses::running(bool on) {
  std::lock_guard lock(mu_);
  running_ = on;
  done_.notify_all();
}

uint64_t RingPasses::begin() {
  uint64_t count = 0;
  if (wake_ && read(wake_.get(), &count, sizeof(count)) < 0) count = 0;  // EAGAIN: no request
  std::lock_guard lock(mu_);
  return requested_;
}

void RingPasses::end(uint64_t served) {
  std::lock_guard lock(mu_);
  served_ = std::max(served_, served);
  done_.notify_all();
}

}  // namespace histd::deploy
