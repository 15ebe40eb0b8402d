// SPDX-License-Identifier: GPL-2.0-only
#include "fs/trace_pipe.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace histd::fs {

namespace {

using namespace std::chrono_literals;

// How often parked readers are checked for lines. The engine's trace buffer
// wakes its own waiters, but waiting there would take lines out for a
// reader that may be interrupted meanwhile; a short poll, only while a
// reader is parked, costs nothing and keeps lines for the readers there are.
constexpr auto kPoll = 20ms;

void reply_lines(fuse_req_t req, const std::string& lines, size_t size, Leftover* rest) {
  // The source hands out at least one whole line or page, even one longer
  // than the read: cut here, the rest kept for the next read if the file
  // keeps one.
  const size_t n = std::min(size, lines.size());
  if (rest && n < lines.size()) rest->keep(lines.substr(n));
  fuse_reply_buf(req, lines.data(), n);
}

// What the reader's last read left, served before anything new.
bool reply_rest(fuse_req_t req, size_t size, Leftover* rest) {
  if (!rest) return false;
  const std::string left = rest->take();
  if (left.empty()) return false;
  reply_lines(req, left, size, rest);
  return true;
}

}  // namespace

bool Leftover::empty() const {
  std::lock_guard lock(mu_);
  return bytes_.empty();
}

std::string Leftover::take() {
  std::lock_guard lock(mu_);
  std::string out = std::move(bytes_);
  bytes_.clear();
  return out;
}

void Leftover::keep(std::string bytes) {
  std::lock_guard lock(mu_);
  bytes_ += bytes;
}

TracePipe::TracePipe(Source source) : source_(std::move(source)) {}

TracePipe::~TracePipe() { stop(); }

void TracePipe::start() {
  // SIGTERM and the like are for the FUSE loop's thread (as libfuse's own
  // workers block them), or it may sleep through them.
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  thread_ = std::thread([this] { serve(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void TracePipe::read(fuse_req_t req, size_t size, bool nonblock, const render::Options& options, Leftover* rest) {
  if (reply_rest(req, size, rest)) return;
  if (nonblock) {
    auto lines = source_(size, options, true);
    if (lines)
      reply_lines(req, *lines, size, rest);
    else
      fuse_reply_err(req, EAGAIN);
    return;
  }
  // Registered before the request is parked, and never under mu_: libfuse
  // calls on_interrupt at once (taking mu_) when the reader was already
  // interrupted. Then the request is not parked yet and on_interrupt finds
  // nothing; fuse_req_interrupted() below tells.
  fuse_req_interrupt_func(req, on_interrupt, this);
  std::unique_lock lock(mu_);
  if (stopping_) {
    lock.unlock();
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  if (fuse_req_interrupted(req)) {
    lock.unlock();
    fuse_reply_err(req, EINTR);
    return;
  }
  // Readers already waiting get lines first.
  if (parked_.empty()) {
    if (auto lines = source_(size, options, false)) {
      lock.unlock();
      reply_lines(req, *lines, size, rest);
      return;
    }
  }
  parked_.push_back(Parked{req, size, options, rest});
  cv_.notify_all();
}

// Runs on a libfuse worker that received the reader's FUSE_INTERRUPT (a
// signal to the reader), with libfuse's lock of the request held: whoever
// takes the request out of parked_ under mu_ answers it, once.
void TracePipe::on_interrupt(fuse_req_t req, void* self) {
  auto* pipe = static_cast<TracePipe*>(self);
  bool found = false;
  {
    std::lock_guard lock(pipe->mu_);
    auto it = std::find_if(pipe->parked_.begin(), pipe->parked_.end(), [&](const Parked& p) { return p.req == req; });
    if (it != pipe->parked_.end()) {
      pipe->parked_.erase(it);
      found = true;
    }
  }
  if (found) fuse_reply_err(req, EINTR);
}

void TracePipe::serve() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (parked_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !parked_.empty(); });
      continue;
    }
    while (!parked_.empty()) {
      const Parked& front = parked_.front();
      auto lines = source_(front.size, front.options, false);
      if (!lines) break;
      const Parked p = front;
      parked_.pop_front();
      lock.unlock();
      reply_lines(p.req, *lines, p.size, p.rest);
      lock.lock();
    }
    cv_.wait_for(lock, kPoll, [this] { return stopping_; });
  }
}

void TracePipe::stop() {
  std::deque<Parked> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    left.swap(parked_);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (const Parked& p : left) fuse_reply_buf(p.req, nullptr, 0);
}

size_t TracePipe::parked() const {
  std::lock_guard lock(mu_);
  return parked_.size();
}

}  // namespace histd::fs
