// SPDX-License-Identifier: GPL-2.0-only
// histd --metrics-listen ADDR:PORT: the process that serves /metrics over
// TCP. histd binds the port itself (a refusal stops histd at start, and a
// port below 1024 works), then runs histd-exporter on it as --metrics-user
// (a user of its own: daemon::exporter_user), with no capabilities and no
// new privileges, from a descriptor opened before privileges drop, with
// histd's metrics socket handed over as a descriptor too
// (daemon::spawn_exporter): it reads the tables through that socket
// (control::Server::open_metrics), which answers the metrics op only, so
// the process on the network can change nothing. histd starts it again
// when it dies (after 1 s, doubling up to 30 s; 1 s again after a minute's
// run), answers the port "503" with the reason while it is not running,
// and the exporter dies with histd (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "histd/fd.h"
#include "histd/result.h"
#include "service/exporter_process.h"

namespace histd::daemon {

class MetricsListener {
 public:
  // Binds `listen` ("127.0.0.1:9100", "[::1]:9100", ":9100" for every
  // address), checks `user` and opens the exporter next to histd.
  static Expected<std::unique_ptr<MetricsListener>> open(const std::string& listen, const std::string& user,
                                                         std::filesystem::path metrics_socket);
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // The user's group: the metrics socket's, so that the exporter may use it.
  gid_t gid() const { return user_.gid; }
  // After daemonizing: runs the exporter, and again whenever it ends.
  void start();

 private:
  MetricsListener() = default;
  void supervise();
  Expected<pid_t> spawn();
  // Until `until` or histd's stop: the port answered 503 with `why`.
  // Whether histd is stopping.
  bool unavailable_until(std::chrono::steady_clock::time_point until, const std::string& why);
  // Whether the exporter has ended within `limit`.
  bool wait_child(std::chrono::milliseconds limit);

  Fd listen_;
  // The exporter's fd 4 reads the end of a pipe whose other end histd
  // holds: closing it tells the exporter to end (and wakes supervise()). A
  // signal would need CAP_KILL, the exporter being another user (the unit
  // grants it only as a last resort, SIGKILL).
  Fd stop_read_;
  Fd stop_write_;
  Fd exporter_;  // O_PATH, opened as histd's user
  ExporterUser user_;
  std::filesystem::path socket_;
  std::mutex mu_;
  pid_t child_ = 0;
  std::thread thread_;
};

}  // namespace histd::daemon
