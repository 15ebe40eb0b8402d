// SPDX-License-Identifier: GPL-2.0-only
#include "histd/log_summary.h"

#include <fmt/format.h>

namespace histd {

LogSummary::LogSummary(Clock::duration interval, std::function<void(std::string_view)> write)
    : interval_(interval), write_(std::move(write)) {}

void LogSummary::write_count_locked(const std::string& kind, const Kind& k) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(interval_).count();
  write_(fmt::format("{}: {} more in the last {} s", kind, k.more, seconds));
}

void LogSummary::note(std::string_view kind, std::string_view line, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    // The first of its kind: written now, its interval begins.
    kinds_.emplace(std::string(kind), Kind{now, 0});
    write_(line);
    return;
  }
  ++it->second.more;
}

void LogSummary::flush(Clock::time_point now) {
  std::lock_guard lock(mu_);
  for (auto it = kinds_.begin(); it != kinds_.end();) {
    if (now - it->second.since < interval_) {
      ++it;
      continue;
    }
    // A kind quiet for a whole interval is forgotten: its next line is
    // written at once again.
    if (it->second.more == 0) {
      it = kinds_.erase(it);
      continue;
    }
    write_count_locked(it->first, it->second);
    it->second = Kind{now, 0};
    ++it;
  }
}

std::optional<LogSummary::Clock::time_point> LogSummary::next_due() {
  std::lock_guard lock(mu_);
  std::optional<Clock::time_point> due;
  for (const auto& [kind, k] : kinds_)
    if (k.more && (!due || k.since + interval_ < *due)) due = k.since + interval_;
  return due;
}

void LogSummary::flush_all() {
  std::lock_guard lock(mu_);
  for (const auto& [kind, k] : kinds_)
    if (k.more) write_count_locked(kind, k);
  kinds_.clear();
}

}  // namespace histd
