// SPDX-License-Identifier: GPL-2.0-only
// The engine's error_log: the last EngineOptions::error_log_entries
// refusals, each stamped with CLOCK_MONOTONIC as tracefs stamps them, and
// the deployer's notes. The Engine owns it; the front ends read and clear
// it through the engine. Not thread-safe: the engine calls it under its
// lock.
#pragma once

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "histd/diagnostic.h"
#include "histd/kernel_reads.h"  // readout::ErrorLogEntry: the engine sees readout through deploy

namespace histd::engine {

class ErrorLog {
 public:
  explicit ErrorLog(size_t capacity) : capacity_(capacity) {}

  // An entry for `d` at `location`, or at the one set_location() holds.
  void add(const std::string& location, const Diagnostic& d);
  // A line of its own, without an error's fields (deploy::Deployer::Log).
  void note(const std::string& text);
  std::vector<readout::ErrorLogEntry> entries() const { return {entries_.begin(), entries_.end()}; }
  void clear() { entries_.clear(); }
  // While a declaration of the configuration directory is applied, its
  // "file:line" stands for every location; "" ends that.
  void set_location(std::string location) { location_ = std::move(location); }

 private:
  const size_t capacity_;
  std::deque<readout::ErrorLogEntry> entries_;
  std::string location_;
};

}  // namespace histd::engine
