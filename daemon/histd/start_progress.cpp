#include "histd/start_progress.h"

#include <systemd/sd-daemon.h>

#include <fmt/format.h>

#include <cstdlib>

namespace histd::daemon {

namespace {

// What systemd is told when `compiled` units were compiled since the start.
std::string message(const std::string& doing, uint64_t compiled) {
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(StartProgress::kWindow).count();
  return fmt::format("EXTEND_TIMEOUT_USEC={}\nSTATUS={}: {} unit{} compiled", usec, doing, compiled,
                     compiled == 1 ? "" : "s");
}

}  // namespace

StartProgress::StartProgress(std::shared_ptr<const runtime::Compiler> compiler, std::string doing)
    : compiler_(std::move(compiler)), doing_(std::move(doing)) {
  base_ = compiled();
  // Not under systemd: no thread, nothing to say.
  if (std::getenv("NOTIFY_SOCKET") == nullptr) return;
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

uint64_t StartProgress::compiled() const {
  const runtime::Compiler::Stats s = compiler_->stats();
  return s.by_server + s.by_clang;
}

void StartProgress::run() {
  uint64_t told = base_;
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, kPoll, [this] { return stop_; })) {
    lock.unlock();
    // Only a compile that finished since the last look earns more time.
    const uint64_t now = compiled();
    if (now != told) {
      told = now;
      sd_notify(0, message(doing_, now - base_).c_str());
    }
    lock.lock();
  }
}

}  // namespace histd::daemon
