// SPDX-License-Identifier: GPL-2.0-only
// What stands between the exporter's clients and histd: the connections'
// deadlines and cap (ConnectionTable, enforced from libmicrohttpd's
// callbacks and a reaper thread), the asking of histd, and a log that one
// client cannot fill (LogSummary). Thread-safe: libmicrohttpd's pool threads
// call it at once.
#pragma once

#include <microhttpd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "histd-exporter/connections.h"
#include "histd/fd.h"
#include "histd/log_summary.h"

namespace histd::exporter {

class Guard {
 public:
  Guard(std::string metrics_socket, ConnectionLimits limits);
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  const ConnectionLimits& limits() const { return limits_; }
  // The reaper: closes connections past their deadlines, writes the log's
  // summaries. stop() ends it.
  void start();
  void stop();

  // libmicrohttpd's accept policy: whether a new connection may come in
  // (at the cap, the idlest is closed to make room).
  bool admit();
  void opened(MHD_Connection* c, void** socket_context);
  void closed(void* socket_context);
  // A request's headers are whole: it is being answered.
  void handling(MHD_Connection* c);
  // Its response is queued.
  void responding(MHD_Connection* c);
  // Its response was sent (or the request ended otherwise).
  void completed(MHD_Connection* c);
  // A message of libmicrohttpd's (`format` before its arguments: its kind).
  void library_message(const char* format, const char* line);

  // The metrics from histd's metrics socket in `format` (prometheus,
  // openmetrics, html): in a sealed memfd of `size` bytes when histd could
  // make one (control/protocol.h, "fd"), else as text; `error` set when
  // histd cannot be asked.
  struct Answer {
    std::string text;
    Fd body;
    size_t size = 0;
  };
  Answer ask_histd(const char* format, std::string& error) const;

 private:
  void close_all(const std::vector<ToClose>& close);
  void reap();
  // The soonest of the connections' deadlines and the log's next count.
  // Called with mu_ held.
  std::optional<Clock::time_point> soonest_locked();
  // Something the reaper's sleep depends on may have changed, and `due` is
  // now the soonest thing to wake for: it is woken only when that is sooner
  // than what it sleeps until. A flood of connections, each with a later
  // deadline than those before it, wakes it for none.
  void wake_for(std::optional<Clock::time_point> due);

  const std::string socket_;
  const ConnectionLimits limits_;
  LogSummary log_;
  std::mutex mu_;  // table_
  ConnectionTable table_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool changed_ = false;
  bool asleep_ = false;
  std::optional<Clock::time_point> asleep_until_;  // none: until woken
  std::thread reaper_;
};

}  // namespace histd::exporter
