// histd --metrics-listen ADDR:PORT (issue 22): the process that serves
// /metrics over TCP. histd binds the port itself (a refusal stops histd at
// start, and a port below 1024 works), then runs histd-exporter on it as
// --metrics-user (never root), with no capabilities and no new privileges:
// it reads the tables through histd's metrics socket
// (control::Server::open_metrics), which answers the metrics op only, so
// the process on the network can change nothing. histd starts it again
// when it dies, and it dies with histd (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "histd/fd.h"
#include "histd/result.h"

namespace histd::daemon {

class MetricsListener {
 public:
  // Binds `listen` ("127.0.0.1:9100", "[::1]:9100", ":9100" for every
  // address) and checks `user` (not root) and the exporter next to histd.
  static Expected<std::unique_ptr<MetricsListener>> open(const std::string& listen, const std::string& user,
                                                         std::filesystem::path metrics_socket);
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // The user's group: the metrics socket's, so that the exporter may use it.
  gid_t gid() const { return gid_; }
  // After daemonizing: runs the exporter, and again whenever it ends.
  void start();

 private:
  MetricsListener() = default;
  void supervise();
  pid_t spawn() const;
  // Whether the exporter has ended within `limit`.
  bool wait_child(std::chrono::milliseconds limit);

  Fd listen_;
  // The exporter's fd 4 reads the end of a pipe whose other end histd
  // holds: closing it tells the exporter to end. A signal would need
  // CAP_KILL, the exporter being another user (the unit grants it only as a
  // last resort, SIGKILL).
  Fd stop_read_;
  Fd stop_write_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string exporter_;
  std::filesystem::path socket_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  pid_t child_ = 0;
  std::thread thread_;
};

}  // namespace histd::daemon
