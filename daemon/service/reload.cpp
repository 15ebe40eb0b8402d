// SPDX-License-Identifier: GPL-2.0-only
#include "service/reload.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "service/start_progress.h"

namespace histd::daemon {

namespace {

// The one piece of process-wide state: a signal handler gets no argument,
// so the eventfd it writes is where it can find it. Set once by install().
std::atomic<int> g_hup_fd{-1};

// Async-signal-safe: a write(2) to an eventfd, errno kept.
void on_sighup(int) {
  const int saved = errno;
  const uint64_t one = 1;
  if (const int fd = g_hup_fd.load(); fd >= 0) (void)!write(fd, &one, sizeof one);
  errno = saved;
}

uint64_t monotonic_usec() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000;
}

}  // namespace

Expected<std::unique_ptr<Reloader>> Reloader::install(std::filesystem::path dir) {
  std::unique_ptr<Reloader> r(new Reloader(std::move(dir)));
  r->hup_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  r->stop_ = Fd(eventfd(0, EFD_CLOEXEC));
  if (!r->hup_ || !r->stop_) return fail_errno("eventfd");
  g_hup_fd = r->hup_.get();
  struct sigaction sa {};
  sa.sa_handler = on_sighup;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGHUP, &sa, nullptr) != 0) return fail_errno("sigaction SIGHUP");
  return r;
}

Reloader::~Reloader() {
  stop();
  signal(SIGHUP, SIG_IGN);
  g_hup_fd = -1;
}

config::Report Reloader::reload(engine::Engine& engine) {
  std::lock_guard lock(mu_);
  if (dir_.empty()) {
    // --config-dir '': histd manages no configuration, and leaves what an
    // earlier one declared as it is.
    fmt::print(stderr, "histd: no configuration directory (--config-dir ''): nothing to reload\n");
    return config::Report{};
  }
  // Before start()'s thread, histd is starting: the reload is part of
  // starting (before the first READY=1). After it, `systemctl reload`
  // waits for READY=1 after RELOADING=1.
  const bool notify = thread_.joinable();
  if (notify) sd_notify(0, fmt::format("RELOADING=1\nMONOTONIC_USEC={}", monotonic_usec()).c_str());
  config::Report r;
  {
    // systemd bounds a reload as it does a start (StartProgress; the
    // start's own covers the reload at start).
    std::optional<StartProgress> progress;
    if (notify) {
      progress.emplace("reloading the configuration");
      progress->watch(engine.shared_compiler());
    }
    r = config::reconcile(engine, dir_);
  }
  for (const std::string& change : r.changes) fmt::print(stderr, "histd: {}\n", change);
  for (const config::Problem& p : r.problems) fmt::print(stderr, "{}", p.text());
  fmt::print(stderr, "histd: {}\n", r.summary());
  if (notify) sd_notify(0, fmt::format("READY=1\nSTATUS={}", r.summary()).c_str());
  return r;
}

void Reloader::start(engine::Engine& engine) {
  if (!thread_.joinable()) thread_ = std::thread([this, &engine] { serve(engine); });
}

void Reloader::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!write(stop_.get(), &one, sizeof one);
  thread_.join();
}

void Reloader::serve(engine::Engine& engine) {
  for (;;) {
    pollfd fds[2] = {{hup_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      fmt::print(stderr, "histd: waiting for SIGHUP: {}\n", strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    // Signals that came together are one reload: the files are read anew.
    uint64_t count = 0;
    if (read(hup_.get(), &count, sizeof count) == sizeof count) {
      fmt::print(stderr, "histd: SIGHUP: reloading {}\n", dir_.string());
      (void)reload(engine);
    }
  }
}

}  // namespace histd::daemon
