// SPDX-License-Identifier: GPL-2.0-only
#include "service/heatmap_sampler.h"

#include <algorithm>
#include <iterator>
#include <optional>

namespace histd::daemon {

namespace {

// What each bucket gained from `last` to `now`; none when a bucket lost
// hits or went away (the table was cleared, or re-created under the same
// text): the history then starts afresh.
std::optional<std::map<uint64_t, uint64_t>> gains(const std::map<uint64_t, uint64_t>& last,
                                                  const std::map<uint64_t, uint64_t>& now) {
  std::map<uint64_t, uint64_t> out;
  for (const auto& [bucket, before] : last) {
    const auto it = now.find(bucket);
    if (it == now.end() || it->second < before) return std::nullopt;
  }
  for (const auto& [bucket, total] : now) {
    const auto it = last.find(bucket);
    const uint64_t gained = total - (it == last.end() ? 0 : it->second);
    if (gained) out.emplace(bucket, gained);
  }
  return out;
}

// At most `most` buckets: the lowest ones (a .buckets key of a wide range
// can have thousands; a .log2 key has at most 65).
std::map<uint64_t, uint64_t> bounded(std::map<uint64_t, uint64_t> buckets, size_t most) {
  while (buckets.size() > most) buckets.erase(std::prev(buckets.end()));
  return buckets;
}

}  // namespace

void HeatmapSampler::sample(const std::vector<readout::EventHist>& events) {
  std::lock_guard lock(mu_);
  std::map<std::pair<std::string, std::string>, Series> next;
  for (const readout::EventHist& e : events) {
    for (const readout::HistTable& t : e.tables) {
      if (next.size() >= kMaxTables) break;
      std::optional<std::map<uint64_t, uint64_t>> now = render::histogram_totals(t.table);
      if (!now) continue;
      std::pair<std::string, std::string> id{e.system + ":" + e.event, t.plan.trigger_text()};
      // The first read of a table is its start: what it holds already came
      // before, in no interval the heatmap knows.
      Series s;
      if (auto it = series_.find(id); it != series_.end()) {
        s = std::move(it->second);
        if (const auto gained = gains(s.last, *now))
          s.intervals.push_back(bounded(*gained, kMaxBuckets));
        else
          s.intervals.clear();
      }
      while (s.intervals.size() > intervals_) s.intervals.pop_front();
      s.last = std::move(*now);
      next.emplace(std::move(id), std::move(s));
    }
  }
  series_ = std::move(next);  // tables that went away are dropped
}

std::vector<render::TableHistory> HeatmapSampler::history() const {
  std::lock_guard lock(mu_);
  std::vector<render::TableHistory> out;
  for (const auto& [id, s] : series_)
    out.push_back({id.first, id.second, static_cast<unsigned>(interval_.count()),
                   std::vector<std::map<uint64_t, uint64_t>>(s.intervals.begin(), s.intervals.end())});
  return out;
}

void HeatmapSampler::start(std::function<std::vector<readout::EventHist>()> read) {
  read_ = std::move(read);
  thread_ = std::thread([this] { loop(); });
}

void HeatmapSampler::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    sample(read_());
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

HeatmapSampler::~HeatmapSampler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace histd::daemon
