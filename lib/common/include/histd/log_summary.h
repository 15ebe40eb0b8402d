// SPDX-License-Identifier: GPL-2.0-only
// Log lines that may come many times a second (a refused connection, a
// client that timed out): one attacker must not fill the log, nor hide
// what else is logged. The first line of each kind is written at once; the
// rest of that kind are counted and written as one line per interval,
// "<kind>: 987 more in the last 60 s".
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace histd {

class LogSummary {
 public:
  using Clock = std::chrono::steady_clock;
  LogSummary(Clock::duration interval, std::function<void(std::string_view)> write);
  // One occurrence of `kind` ("histd-exporter: connection closed"), whose
  // line this time is `line` ("histd-exporter: connection closed: 127.0.0.2").
  void note(std::string_view kind, std::string_view line, Clock::time_point now = Clock::now());
  // Writes the counts whose interval has ended.
  void flush(Clock::time_point now = Clock::now());
  // Writes every count now (at exit).
  void flush_all();
  // When the next count is due (a caller that sleeps wakes then), or none:
  // nothing is counted, and nothing need wake.
  std::optional<Clock::time_point> next_due();

 private:
  struct Kind {
    Clock::time_point since;  // when its interval began
    uint64_t more = 0;        // noted since the line was written
  };
  void write_count_locked(const std::string& kind, const Kind& k);
  const Clock::duration interval_;
  const std::function<void(std::string_view)> write_;
  std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_;
};

}  // namespace histd
