// SPDX-License-Identifier: GPL-2.0-only
#include "histd/quantile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "histd/text.h"

namespace histd::quantile {

namespace {

using u128 = unsigned __int128;

constexpr uint64_t kMillion = 1'000'000;

ListError list_error(size_t position, std::string message) { return ListError{position, std::move(message)}; }

// One item of the list (trimmed); `at` is where it starts in the list.
Result<Percentile, ListError> parse_item(std::string_view item, size_t at) {
  const std::string shown(item);
  if (item.empty()) return unexpected(list_error(at, "an empty item: expected a percentile such as 99.9"));
  if (item.front() == '-') return unexpected(list_error(at, fmt::format("'{}' is not in (0, 100]", shown)));
  const size_t dot = item.find('.');
  const std::string_view whole = item.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : item.substr(dot + 1);
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || !digits(whole) || !digits(fraction) || (dot != std::string_view::npos && fraction.empty()))
    return unexpected(list_error(at, fmt::format("'{}' is not a number (a percentile such as 99.9)", shown)));
  if (fraction.size() > kMaxDecimals)
    return unexpected(list_error(at, fmt::format("'{}' has more than {} decimals", shown, kMaxDecimals)));
  const std::string_view significant = whole.substr(std::min(whole.find_first_not_of('0'), whole.size()));
  if (significant.size() > 3) return unexpected(list_error(at, fmt::format("'{}' is not in (0, 100]", shown)));
  uint64_t millionths = 0;
  for (char c : significant) millionths = millionths * 10 + static_cast<uint64_t>(c - '0');
  millionths *= kMillion;
  uint64_t scale = kMillion / 10;
  for (char c : fraction) {
    millionths += static_cast<uint64_t>(c - '0') * scale;
    scale /= 10;
  }
  if (millionths == 0 || millionths > kHundredPercent)
    return unexpected(list_error(at, fmt::format("'{}' is not in (0, 100]", shown)));
  return Percentile{millionths};
}

// Keys in ascending order: as int64 for a signed key.
struct KeyOrder {
  bool is_signed = false;
  bool operator()(uint64_t a, uint64_t b) const {
    return is_signed ? static_cast<int64_t>(a) < static_cast<int64_t>(b) : a < b;
  }
};

double as_number(uint64_t v, bool is_signed) {
  return is_signed ? static_cast<double>(static_cast<int64_t>(v)) : static_cast<double>(v);
}

// The percentile `p` of one label set: `buckets` ascending, `total` > 0.
Estimate estimate(const std::map<uint64_t, uint64_t, KeyOrder>& buckets, u128 total, const Scale& scale,
                  const Percentile& p) {
  // Reached when cumulative * 100% >= p * total: both sides exact integers.
  const u128 target = u128{p.millionths} * total;
  u128 before = 0;
  auto it = buckets.begin();
  for (; it != buckets.end(); ++it) {
    if ((before + it->second) * kHundredPercent >= target && it->second > 0) break;
    before += it->second;
  }
  if (it == buckets.end()) --it;  // unreachable for p <= 100%: the last bucket reaches it
  Estimate e;
  e.percentile = p;
  e.bucket = modifier::key_bounds(scale.transform, scale.buckets, it->first);
  e.exact = e.bucket.lower == e.bucket.upper;
  const double lower = as_number(e.bucket.lower, scale.is_signed);
  if (e.exact) {
    e.estimate = lower;
    return e;
  }
  // The share of the bucket's hits below the rank: (target / 100% - before) / hits.
  const long double rank = static_cast<long double>(target) / static_cast<long double>(kHundredPercent);
  long double share = (rank - static_cast<long double>(before)) / static_cast<long double>(it->second);
  share = std::clamp(share, 0.0L, 1.0L);
  const long double width = static_cast<long double>(as_number(e.bucket.upper, scale.is_signed)) - lower;
  e.estimate = static_cast<double>(static_cast<long double>(lower) + share * width);
  return e;
}

}  // namespace

std::string Percentile::text() const {
  std::string s = fmt::format("{}", millionths / kMillion);
  uint64_t fraction = millionths % kMillion;
  if (fraction == 0) return s;
  std::string digits = fmt::format("{:06}", fraction);
  while (digits.back() == '0') digits.pop_back();
  return s + "." + digits;
}

Result<std::vector<Percentile>, ListError> parse_list(std::string_view text) {
  if (trim(text).empty()) return unexpected(list_error(0, "no percentile given: expected a list such as 50,90,99"));
  std::vector<Percentile> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view raw =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t lead = 0;
    while (lead < raw.size() && is_space(raw[lead])) ++lead;
    auto p = parse_item(trim(raw), start + lead);
    if (!p) return unexpected(std::move(p).error());
    out.push_back(*p);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<LabelSet> percentiles(std::span<const Row> rows, const Scale& scale, std::span<const Percentile> wanted) {
  struct Group {
    std::map<uint64_t, uint64_t, KeyOrder> buckets;
    u128 total = 0;
  };
  std::vector<std::string> order;
  std::unordered_map<std::string, Group> groups;
  for (const Row& r : rows) {
    auto [it, fresh] =
        groups.try_emplace(r.labels, Group{std::map<uint64_t, uint64_t, KeyOrder>(KeyOrder{scale.is_signed})});
    if (fresh) order.push_back(r.labels);
    uint64_t& hits = it->second.buckets[r.key];
    hits = hits > UINT64_MAX - r.hits ? UINT64_MAX : hits + r.hits;
    it->second.total += r.hits;
  }
  std::vector<LabelSet> out;
  out.reserve(order.size());
  for (const std::string& labels : order) {
    const Group& g = groups.at(labels);
    LabelSet set;
    set.labels = labels;
    set.hits = g.total > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(g.total);
    if (g.total > 0)
      for (const Percentile& p : wanted) set.estimates.push_back(estimate(g.buckets, g.total, scale, p));
    out.push_back(std::move(set));
  }
  return out;
}

}  // namespace histd::quantile
