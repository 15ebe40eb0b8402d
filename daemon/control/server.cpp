// SPDX-License-Identifier: GPL-2.0-only
#include "control/server.h"

#include <grp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

#include <string>
#include <system_error>
#include <vector>

#include "control/connection.h"
#include "control/protocol.h"

namespace histd::control {

namespace {

// Room for connections that arrive while every place is taken; beyond it
// connect() waits (blocking) or fails with EAGAIN (non-blocking).
constexpr int kBacklog = 64;

std::string group_name(gid_t gid) {
  group g{};
  group* found = nullptr;
  std::vector<char> buf(16384);
  if (getgrgid_r(gid, &g, buf.data(), buf.size(), &found) == 0 && found) return found->gr_name;
  return std::to_string(gid);
}

void wake(int eventfd_fd) {
  uint64_t one = 1;
  (void)!write(eventfd_fd, &one, sizeof(one));
}

}  // namespace

Expected<std::unique_ptr<Server>> Server::open(const std::filesystem::path& socket_path, gid_t group,
                                               ServerLimits limits) {
  std::unique_ptr<Server> s(new Server());
  s->access_ = Access{group, group ? group_name(group) : std::string()};
  s->limits_ = limits;
  s->socket_ = HISTD_TRY(SocketFile::create(socket_path, group, kBacklog));
  s->stop_ = Fd(eventfd(0, EFD_CLOEXEC));
  s->freed_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->stop_ || !s->freed_) return fail_errno("eventfd");
  return s;
}

Expected<std::unique_ptr<Server>> Server::open_metrics(const std::filesystem::path& socket_path, gid_t group,
                                                       ServerLimits limits) {
  auto s = HISTD_TRY(open(socket_path, group, limits));
  s->access_.metrics_only = true;
  return s;
}

void Server::start(engine::Engine& engine, ReloadHook reload, const instances::Instances* instances,
                   std::function<std::vector<render::TableHistory>()> page_history) {
  engine_ = &engine;
  services_ = Services{std::move(reload), limits_.metrics_max_series, instances, std::move(page_history)};
  thread_ = std::thread([this] { serve(); });
}

Expected<std::unique_ptr<Server>> Server::start(engine::Engine& engine, const std::filesystem::path& socket_path,
                                                gid_t group, ServerLimits limits) {
  auto s = HISTD_TRY(open(socket_path, group, limits));
  s->start(engine);
  return s;
}

Server::~Server() {
  wake(stop_.get());
  if (thread_.joinable()) thread_.join();
  for (Worker& w : workers_) w.thread.join();
  log_.flush_all();
}

void Server::serve() {
  for (;;) {
    reap();
    // With every place taken the listening socket is left alone: new
    // connections wait in its backlog, and `freed_` says when to look again.
    const bool full = active_.load() >= limits_.max_connections;
    pollfd fds[3] = {{stop_.get(), POLLIN, 0}, {freed_.get(), POLLIN, 0}, {full ? -1 : socket_->fd(), POLLIN, 0}};
    // Asleep until something comes, or the log's counts are due (an idle
    // histd wakes for nothing).
    log_.flush();
    const auto due = log_.next_due();
    const int wait =
        due ? static_cast<int>(std::clamp<int64_t>(
                  std::chrono::ceil<std::chrono::milliseconds>(*due - LogSummary::Clock::now()).count(), 0, 60000))
            : -1;
    if (poll(fds, 3, wait) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    if (fds[1].revents) {
      uint64_t n;
      (void)!read(freed_.get(), &n, sizeof(n));
    }
    if (!(fds[2].revents & POLLIN)) continue;
    Fd conn(accept4(socket_->fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (conn) {
      spawn(std::move(conn));
    } else if (errno == EMFILE || errno == ENFILE) {
      // Out of descriptors, the connection stays queued and the socket
      // readable: pause rather than spin until some are closed.
      pollfd stop{stop_.get(), POLLIN, 0};
      poll(&stop, 1, 100);
    }
  }
}

void Server::spawn(Fd conn) {
  Worker& w = workers_.emplace_back();
  ++active_;
  try {
    w.thread = std::thread([this, &w, c = std::move(conn)]() mutable {
      // Nothing a client sends may end histd: handle() answers bad requests
      // itself; this catches what it cannot (allocation failures).
      try {
        handle(c.get());
      } catch (...) {
      }
      c = Fd();  // the client sees the end before a new one is taken in
      w.done = true;
      --active_;
      wake(freed_.get());
    });
  } catch (const std::system_error& e) {
    // No thread to be had: the connection is closed unanswered.
    fmt::print(stderr, "histd: control socket: cannot start a thread: {}\n", e.what());
    workers_.pop_back();
    --active_;
  }
}

void Server::reap() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!it->done.load()) {
      ++it;
      continue;
    }
    it->thread.join();
    it = workers_.erase(it);
  }
}

void Server::handle(int fd) {
  Connection conn(fd, stop_.get());
  const Peer peer = peer_of(fd);
  nlohmann::json reply;
  std::optional<std::string> raw;
  Fd output;  // the raw output in a memfd, when the client asked for one
  try {
    auto request = conn.receive(limits_.request_deadline);
    if (request) {
      reply = dispatch(*engine_, *request, peer, access_, services_);
      raw = take_raw_output(*request, reply);
      if (raw && wants_fd(*request) && (output = output_memfd(*raw))) {
        reply["fd"] = true;
        raw.reset();
      }
    } else {
      const Error& e = request.error();
      // EPIPE: the client is gone (a truncated frame); ECANCELED: histd is
      // stopping. Nobody to answer.
      if (e.err == EPIPE || e.err == ECANCELED) return;
      if (e.err == EAGAIN)
        log_.note("histd: control socket: a client sent no whole request in time",
                  fmt::format("histd: control socket: pid {} (uid {}): {}", peer.pid, peer.uid, e.context));
      // Who may not use the socket learns only that.
      reply = access_.allows(peer) ? failure(e.err, e.context) : access_.refusal();
    }
  } catch (const std::exception& e) {
    reply = failure(EIO, std::string("internal error: ") + e.what());
  }
  auto sent = conn.send(reply, limits_.reply_deadline, raw, output ? output.get() : -1);
  if (!sent && sent.error().err == ETIMEDOUT)
    log_.note(
        "histd: control socket: a client did not take its answer in time",
        fmt::format("histd: control socket: dropped pid {} (uid {}): {}", peer.pid, peer.uid, sent.error().context));
}

}  // namespace histd::control
