#include <algorithm>
#include <cstring>

#include "histd/table.h"

namespace histd::table {

std::vector<uint64_t> merge_percpu(std::span<const uint8_t> buf, size_t n_vals, unsigned ncpus) {
  std::vector<uint64_t> sum(n_vals, 0);
  const size_t stride = ((n_vals * 8 + 7) / 8) * 8;
  for (unsigned cpu = 0; cpu < ncpus; ++cpu) {
    if ((cpu + 1) * stride > buf.size()) break;
    for (size_t i = 0; i < n_vals; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, buf.data() + cpu * stride + i * 8, 8);
      sum[i] += v;  // u64 wrap-around, as the kernel's atomic64 sums
    }
  }
  return sum;
}

namespace {

uint64_t key_number(const Row& r, const KeyColumn& k) {
  uint64_t v = 0;
  if (k.offset + 8 <= r.key.size()) std::memcpy(&v, r.key.data() + k.offset, 8);
  return v;
}

// <0, 0, >0 like strcmp, for one sort column in ascending order.
int compare_column(const Table& t, const SortColumn& c, const Row& a, const Row& b) {
  if (c.kind == SortColumn::Kind::Value) {
    const uint64_t x = a.vals.at(c.index), y = b.vals.at(c.index);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const KeyColumn& k = t.keys.at(c.index);
  if (k.display == KeyDisplay::String) {
    const size_t end = std::min<size_t>(k.offset + k.size, a.key.size());
    const char* x = reinterpret_cast<const char*>(a.key.data() + k.offset);
    const char* y = reinterpret_cast<const char*>(b.key.data() + k.offset);
    return std::strncmp(x, y, end - k.offset);
  }
  if (k.display == KeyDisplay::Stacktrace) return 0;  // stacks are not comparable
  const uint64_t x = key_number(a, k), y = key_number(b, k);
  if (k.is_signed) {
    const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    return sx < sy ? -1 : sx > sy ? 1 : 0;
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

}  // namespace

void sort_rows(Table& t) {
  std::vector<SortColumn> order = t.sort;
  if (order.empty()) order.push_back(SortColumn{SortColumn::Kind::Value, 0, false});
  std::sort(t.rows.begin(), t.rows.end(), [&](const Row& a, const Row& b) {
    for (const SortColumn& c : order) {
      const int r = compare_column(t, c, a, b);
      if (r != 0) return c.descending ? r > 0 : r < 0;
    }
    return a.key < b.key;  // deterministic: never depends on hash order
  });
}

}  // namespace histd::table
