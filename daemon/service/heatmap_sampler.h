// SPDX-License-Identifier: GPL-2.0-only
// The history behind the page's latency heatmaps (docs/metrics.md, "The
// page"): every interval, each histogram table's merged bucket totals
// (render::histogram_totals) are read and what each bucket gained since
// the last read is kept, for the last `intervals` intervals. A table keeps
// its history while its trigger text stays on its event; a cleared table
// (a bucket's total went down) or a new one starts afresh, so no interval
// ever holds a negative or a since-the-start count. Memory is bounded:
// kMaxTables tables, `intervals` intervals, kMaxBuckets buckets each.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "histd/readout.h"
#include "histd/render.h"

namespace histd::daemon {

class HeatmapSampler {
 public:
  static constexpr size_t kMaxTables = 64;
  static constexpr size_t kMaxBuckets = 128;

  HeatmapSampler(std::chrono::seconds interval, size_t intervals) : interval_(interval), intervals_(intervals) {}
  ~HeatmapSampler();  // stops the thread
  HeatmapSampler(const HeatmapSampler&) = delete;
  HeatmapSampler& operator=(const HeatmapSampler&) = delete;

  // After daemonizing: reads the tables with `read` now and every interval.
  void start(std::function<std::vector<readout::EventHist>()> read);
  // One read, as the thread makes it.
  void sample(const std::vector<readout::EventHist>& events);
  // What the page draws.
  std::vector<render::TableHistory> history() const;

 private:
  struct Series {
    std::map<uint64_t, uint64_t> last;  // the totals at the last read
    std::deque<std::map<uint64_t, uint64_t>> intervals;
  };
  void loop();

  const std::chrono::seconds interval_;
  const size_t intervals_;
  std::function<std::vector<readout::EventHist>()> read_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Series> series_;  // (event, trigger text) -> its history
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace histd::daemon
