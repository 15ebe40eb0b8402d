// SPDX-License-Identifier: GPL-2.0-only
// histd's side of the control socket: a thread that accepts histctl
// connections and serves each on a thread of its own, a bounded number at
// once, each request one engine call. Only root and members of the group
// may use the socket, to read as to change (its file mode, and the peer's
// credentials checked for every request).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <list>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "control/ops.h"
#include "control/socket_file.h"
#include "histd/engine.h"
#include "histd/fd.h"
#include "histd/log_summary.h"
#include "histd/result.h"

namespace histd::control {

// How much the server serves at once, and for how long. A stuck client holds
// one connection's place until a deadline ends it; the others keep being
// served.
struct ServerLimits {
  // Connections served at once. Further ones wait in the listen backlog
  // until one ends (each ends within the deadlines below, plus its engine
  // call), then are served in turn.
  size_t max_connections = 16;
  std::chrono::milliseconds request_deadline{5000};  // the whole request, from accept
  std::chrono::milliseconds reply_deadline{10000};   // the whole reply
  // Label sets of a table a metrics scrape writes (histd --metrics-max-series).
  size_t metrics_max_series = 10000;
};

class Server {
 public:
  // The socket file (control::SocketFile: refusals, mode), listening but not
  // yet answering: connections wait in the backlog until start(). Root, and
  // members of `group` (0: none), may use it.
  static Expected<std::unique_ptr<Server>> open(const std::filesystem::path& socket_path, gid_t group = 0,
                                                ServerLimits limits = {});
  // The same for the metrics socket: it answers the metrics op only (its
  // peers, root and `group`, may change nothing).
  static Expected<std::unique_ptr<Server>> open_metrics(const std::filesystem::path& socket_path, gid_t group,
                                                        ServerLimits limits = {});
  // Answers from now on, on threads of its own (start them after any fork);
  // `reload` answers `histctl reload`; `page_history`, the page's heatmaps.
  void start(engine::Engine& engine, ReloadHook reload = {}, const instances::Instances* instances = nullptr,
             std::function<std::vector<render::TableHistory>()> page_history = {});
  // open() then start().
  static Expected<std::unique_ptr<Server>> start(engine::Engine& engine, const std::filesystem::path& socket_path,
                                                 gid_t group = 0, ServerLimits limits = {});
  // Ends every connection at once (a request already in the engine ends
  // first), then removes the socket file.
  ~Server();

 private:
  // One connection's thread; `done` once it has closed the connection.
  struct Worker {
    std::thread thread;
    std::atomic<bool> done{false};
  };

  Server() = default;
  void serve();
  void spawn(Fd conn);
  void reap();
  void handle(int fd);

  engine::Engine* engine_ = nullptr;
  Services services_;
  Access access_;
  ServerLimits limits_;
  std::unique_ptr<SocketFile> socket_;
  Fd stop_;   // eventfd, written once: ends serve() and every wait of every connection
  Fd freed_;  // eventfd: a connection ended, so serve() may accept again
  std::atomic<size_t> active_{0};
  // Clients dropped at a deadline: a line of each kind, then a count a
  // minute (one client must not fill histd's log).
  LogSummary log_{std::chrono::seconds(60), [](std::string_view line) { fmt::print(stderr, "{}\n", line); }};
  std::list<Worker> workers_;  // serve()'s thread only (and the destructor after it)
  std::thread thread_;
};

}  // namespace histd::control
