// SPDX-License-Identifier: GPL-2.0-only
#include "service/start_progress.h"

#include <systemd/sd-daemon.h>

#include <fmt/format.h>

#include <cstdlib>

namespace histd::daemon {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t compiles(const runtime::Compiler& c) {
  const runtime::Compiler::Stats s = c.stats();
  return s.by_server + s.by_clang;
}

}  // namespace

StartProgress::StartProgress(std::string doing) : doing_(std::move(doing)), moved_(Clock::now()) {
  // Not under systemd: no thread, nothing to say.
  if (std::getenv("NOTIFY_SOCKET") == nullptr) return;
  // The first ask now, before this thread might wait for a core.
  bool moving = true;
  sd_notify(0, message_locked(Clock::now(), moving).c_str());
  thread_ = std::thread([this] { run(); });
}

StartProgress::~StartProgress() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StartProgress::phase(std::string name) {
  std::lock_guard lock(mu_);
  phase_ = std::move(name);
  moved_ = Clock::now();
}

void StartProgress::watch(std::shared_ptr<const runtime::Compiler> compiler) {
  std::lock_guard lock(mu_);
  compiler_ = std::move(compiler);
  base_ = compiler_ ? compiles(*compiler_) : 0;
  compiled_ = 0;
}

std::string StartProgress::message_locked(Clock::time_point now, bool& moving) {
  if (compiler_) {
    const uint64_t n = compiles(*compiler_) - base_;
    if (n != compiled_) moved_ = now;
    compiled_ = n;
  }
  moving = now - moved_ < kWindow;
  std::string status = doing_;
  if (!phase_.empty()) status += ": " + phase_;
  if (compiler_) status += fmt::format(", {} unit{} compiled", compiled_, compiled_ == 1 ? "" : "s");
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(kExtend).count();
  return fmt::format("EXTEND_TIMEOUT_USEC={}\nSTATUS={}", usec, status);
}

void StartProgress::run() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, kPoll, [this] { return stop_; })) {
    bool moving = true;
    const std::string message = message_locked(Clock::now(), moving);
    // Stopped moving (a hang): systemd's own timeout is left to apply.
    if (!moving) continue;
    lock.unlock();
    sd_notify(0, message.c_str());
    lock.lock();
  }
}

}  // namespace histd::daemon
