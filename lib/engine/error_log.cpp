// SPDX-License-Identifier: GPL-2.0-only
#include "engine/error_log.h"

#include <time.h>

namespace histd::engine {

namespace {

// An error_log entry stamped with CLOCK_MONOTONIC, as tracefs stamps them.
readout::ErrorLogEntry stamped_entry() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  readout::ErrorLogEntry e;
  e.seconds = static_cast<uint64_t>(ts.tv_sec);
  e.microseconds = static_cast<uint32_t>(ts.tv_nsec / 1000);
  return e;
}

}  // namespace

void ErrorLog::add(const std::string& location, const Diagnostic& d) {
  readout::ErrorLogEntry e = stamped_entry();
  e.location = location_.empty() ? location : location_;
  e.diagnostic = d;
  entries_.push_back(std::move(e));
  while (entries_.size() > capacity_) entries_.pop_front();
}

void ErrorLog::note(const std::string& text) {
  readout::ErrorLogEntry e;
  e.note = text;
  entries_.push_back(std::move(e));
}

}  // namespace histd::engine
