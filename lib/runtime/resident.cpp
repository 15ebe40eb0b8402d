// SPDX-License-Identifier: GPL-2.0-only
#include "runtime/resident.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace histd::runtime {

Compiler::Resident::Resident(const std::filesystem::path& program)
    : program_(program), client_(program), wake_(eventfd(0, EFD_CLOEXEC)), stop_(eventfd(0, EFD_CLOEXEC)) {}

Compiler::Resident::~Resident() {
  if (watcher_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_.get(), &one, sizeof one);
    watcher_.join();
  }
}

bool Compiler::Resident::start_locked(bool prime) {
  if (!client_.start(timeout_, idle_shed_, prime && primer_ ? &*primer_ : nullptr)) return false;
  ++stats_.server_starts;
  idle_stopped_ = false;
  last_used_ = std::chrono::steady_clock::now();
  const uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof one);
  return true;
}

void Compiler::Resident::set_primer(cc::CcRequest primer) {
  std::lock_guard lock(mu_);
  primer_ = std::move(primer);
}

void Compiler::Resident::start() {
  std::lock_guard lock(mu_);
  wanted_ = true;
  if (!client_.running()) start_locked(true);
}

void Compiler::Resident::set_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  timeout_ = timeout;
  if (client_.running()) start_locked(true);  // the timeout is set at start
}

void Compiler::Resident::set_idle_shed(std::chrono::milliseconds after) {
  std::lock_guard lock(mu_);
  if (idle_shed_ == after) return;
  idle_shed_ = after;
  if (client_.running()) start_locked(true);  // the server is told at start
}

void Compiler::Resident::set_idle_stop(std::chrono::milliseconds after) {
  std::lock_guard lock(mu_);
  idle_stop_ = after;
  const uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof one);  // the watcher's next wait
}

void Compiler::Resident::warm() {
  std::lock_guard lock(mu_);
  if (wanted_ && idle_stopped_ && !client_.running() && failures_ < kMaxServerFailures) start_locked(false);
}

int Compiler::Resident::idle_wait_ms_locked() const {
  if (idle_stop_.count() <= 0 || !client_.running()) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(last_used_ + idle_stop_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(left.count(), 0));
}

void Compiler::Resident::stop_if_idle_locked() {
  if (idle_wait_ms_locked() != 0) return;
  client_.stop();
  idle_stopped_ = true;
  ++stats_.idle_stops;
}

void Compiler::Resident::watch() {
  if (!watcher_.joinable()) watcher_ = std::thread([this] { watch_loop(); });
}

pid_t Compiler::Resident::pid() {
  std::lock_guard lock(mu_);
  return client_.running() ? client_.pid() : 0;
}

Compiler::Stats Compiler::Resident::stats() {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.resident = !program_.empty();
  s.server_pid = client_.running() ? client_.pid() : 0;
  s.failures_in_row = failures_;
  s.given_up = failures_ >= kMaxServerFailures;
  return s;
}

void Compiler::Resident::count_clang() {
  std::lock_guard lock(mu_);
  ++stats_.by_clang;
}

void Compiler::Resident::failed_locked(const std::string& what, bool compiling) {
  const bool again = ++failures_ < kMaxServerFailures;
  std::string next = compiling ? "clang compiles this unit" : "starting another";
  if (!again)
    next = fmt::format("clang compiles {} every unit from now on ({} failures in a row)", compiling ? "this and" : "",
                       failures_);
  fmt::print(stderr, "histd: {} {}; {}\n", program_.string(), what, next);
  if (again) start_locked(true);
}

std::optional<CcClient::Reply> Compiler::Resident::ask(const cc::CcRequest& req) {
  std::lock_guard lock(mu_);
  if (!wanted_ || failures_ >= kMaxServerFailures) return std::nullopt;
  if (!client_.running() && !start_locked(false)) {
    failed_locked("cannot be started", true);
    return std::nullopt;
  }
  std::optional<CcClient::Reply> reply = client_.request(req);
  last_used_ = std::chrono::steady_clock::now();
  if (!reply) {
    // Lost (killed, crashed, hung): clang compiles this unit, which also
    // tells a source that crashes the compiler from a dead server.
    failed_locked(client_.failure(), true);
    return std::nullopt;
  }
  if (reply->status == cc::CcStatus::ServerError) {
    // The server could not compile at all (histd-cc's own error, not the
    // unit's): clang, spawned afresh, may well.
    std::string why = reply->payload.substr(0, reply->payload.find('\n'));
    client_.stop();
    failed_locked("failed on its own (" + why + ")", true);
    return std::nullopt;
  }
  failures_ = 0;
  ++stats_.by_server;
  return reply;
}

// Between compiles nobody asks the server anything: without this thread a
// killed server stayed a zombie until the next compile found it gone.
void Compiler::Resident::watch_loop() {
  for (;;) {
    pid_t pid = 0;
    Fd pidfd;
    int wait_ms = -1;
    {
      std::lock_guard lock(mu_);
      wait_ms = idle_wait_ms_locked();
      if (client_.running() && client_.pidfd() >= 0) {
        pid = client_.pid();
        pidfd = Fd(fcntl(client_.pidfd(), F_DUPFD_CLOEXEC, 0));
      }
    }
    // poll skips fd -1 (no server).
    pollfd fds[3] = {{stop_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
    const int ready = poll(fds, 3, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents & POLLIN) return;
    if (ready == 0) {
      std::lock_guard lock(mu_);
      stop_if_idle_locked();  // a compile may have come meanwhile: then not yet
      continue;
    }
    if (fds[1].revents & POLLIN) {
      uint64_t n = 0;
      (void)!read(wake_.get(), &n, sizeof n);
      continue;
    }
    if (!(fds[2].revents & (POLLIN | POLLHUP))) continue;
    std::lock_guard lock(mu_);
    // A compile may have replaced it meanwhile (and reaped it).
    if (!client_.running() || client_.pid() != pid) continue;
    const std::string how = client_.stop();
    failed_locked(fmt::format("(pid {}) ended{} between compiles", pid, how.empty() ? "" : " with " + how), false);
  }
}

// ---- the Compiler's side ----

void Compiler::start_server() {
  if (!paths_.cc_server.empty()) resident_->start();
}

void Compiler::watch_server() {
  if (!paths_.cc_server.empty()) resident_->watch();
}

void Compiler::set_server_timeout(std::chrono::milliseconds timeout) { resident_->set_timeout(timeout); }

void Compiler::set_idle_stop(std::chrono::milliseconds after) { resident_->set_idle_stop(after); }

void Compiler::set_idle_shed(std::chrono::milliseconds after) { resident_->set_idle_shed(after); }

void Compiler::warm() const {
  if (!paths_.cc_server.empty()) resident_->warm();
}

pid_t Compiler::server_pid() const { return resident_->pid(); }

Compiler::Stats Compiler::stats() const { return resident_->stats(); }

Compiler::Compiler(Compiler&&) noexcept = default;
Compiler& Compiler::operator=(Compiler&&) noexcept = default;
Compiler::~Compiler() = default;

}  // namespace histd::runtime
