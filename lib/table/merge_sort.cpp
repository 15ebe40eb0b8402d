// SPDX-License-Identifier: GPL-2.0-only
#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <utility>

#include "histd/populate.h"
#include "histd/table.h"

namespace histd::table {

size_t Table::stored_at(size_t i) const { return order.empty() ? i : order[i]; }

Row Table::row(size_t i) const {
  const size_t at = stored_at(i), nv = vals.size();
  return Row{std::span<const uint8_t>(key_bytes.data() + at * key_size, key_size),
             std::span<const uint64_t>(val_words.data() + at * nv, nv),
             comms.empty() ? std::string_view() : std::string_view(comms[at]),
             record_bytes.empty() ? std::span<const uint8_t>()
                                  : std::span<const uint8_t>(record_bytes.data() + at * record_size, record_size)};
}

void Table::reserve(size_t n) {
  key_bytes.reserve(n * key_size);
  val_words.reserve(n * vals.size());
}

void Table::add(std::span<const uint8_t> key, std::span<const uint64_t> values, std::string_view comm) {
  const size_t k = key_bytes.size();
  key_bytes.resize(k + key_size, 0);
  std::memcpy(key_bytes.data() + k, key.data(), std::min<size_t>(key.size(), key_size));
  const size_t v = val_words.size();
  val_words.resize(v + vals.size(), 0);
  std::copy_n(values.begin(), std::min(values.size(), vals.size()), val_words.begin() + static_cast<ptrdiff_t>(v));
  ++n_entries;
  if (!order.empty()) order.push_back(static_cast<uint32_t>(n_entries - 1));
  if (!comm.empty() || !comms.empty()) {
    comms.resize(n_entries);
    comms.back() = comm;
  }
  if (!record_bytes.empty()) record_bytes.resize(n_entries * record_size, 0);
}

void Table::add_values(size_t i, std::span<const uint64_t> values) {
  const size_t at = stored_at(i), nv = vals.size();
  for (size_t k = 0; k < std::min(nv, values.size()); ++k) val_words[at * nv + k] += values[k];
}

void Table::set_record(size_t i, std::span<const uint8_t> record) {
  if (record_bytes.empty()) {
    record_size = static_cast<uint32_t>(record.size());
    record_bytes.assign(n_entries * record_size, 0);
  }
  const size_t at = stored_at(i);
  if (at >= n_entries || record_size == 0) return;
  std::memcpy(record_bytes.data() + at * record_size, record.data(), std::min<size_t>(record.size(), record_size));
}

void merge_percpu(std::span<const uint8_t> buf, size_t n_vals, unsigned ncpus, size_t cpu_stride,
                  std::span<uint64_t> sum) {
  std::fill(sum.begin(), sum.end(), 0);
  n_vals = std::min(n_vals, sum.size());
  for (unsigned cpu = 0; cpu < ncpus; ++cpu) {
    if (cpu * cpu_stride + n_vals * 8 > buf.size()) break;
    for (size_t i = 0; i < n_vals; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, buf.data() + cpu * cpu_stride + i * 8, 8);
      sum[i] += v;  // u64 wrap-around, as the kernel's atomic64 sums
    }
  }
}

namespace {

// Up to 8 bytes from `p` as a big-endian number, so that comparing numbers
// compares the bytes as memcmp does.
uint64_t byte_order_word(const uint8_t* p, size_t n) {
  if (n >= 8) {  // the common case, every key of 8 bytes or more: one load
    uint64_t w = 0;
    std::memcpy(&w, p, 8);
    if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
    return w;
  }
  uint64_t w = 0;
  for (size_t i = 0; i < 8; ++i) w = (w << 8) | (i < n ? p[i] : 0);
  return w;
}

// <0, 0, >0 like strcmp, for one sort column in ascending order.
int compare_column(const Table& t, const SortColumn& c, const Row& a, const Row& b) {
  if (c.kind == SortColumn::Kind::Value) {
    const uint64_t x = a.vals[c.index], y = b.vals[c.index];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const KeyColumn& k = t.keys.at(c.index);
  const KeyHolds holds = key_traits(k.display).holds;
  if (holds == KeyHolds::String) {
    const size_t end = std::min<size_t>(k.offset + k.size, a.key.size());
    const char* x = reinterpret_cast<const char*>(a.key.data() + k.offset);
    const char* y = reinterpret_cast<const char*>(b.key.data() + k.offset);
    return std::strncmp(x, y, end - k.offset);
  }
  if (holds == KeyHolds::Stack) return 0;  // stacks are not comparable
  const uint64_t x = a.key_number(k.offset), y = b.key_number(k.offset);
  if (k.is_signed) {
    const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    return sx < sy ? -1 : sx > sy ? 1 : 0;
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

// A column's place in the order as one unsigned number: exact for numbers;
// for strings only the first 8 bytes (to the NUL), so equal words still need
// the full comparison.
uint64_t order_word(const Table& t, const SortColumn& c, const Row& r) {
  uint64_t w = 0;
  if (c.kind == SortColumn::Kind::Value) {
    w = r.vals[c.index];
  } else {
    const KeyColumn& k = t.keys.at(c.index);
    const KeyHolds holds = key_traits(k.display).holds;
    if (holds == KeyHolds::String) {
      const size_t room = std::min<size_t>(k.size, r.key.size() - std::min<size_t>(k.offset, r.key.size()));
      const uint8_t* s = r.key.data() + k.offset;
      w = byte_order_word(s, std::min<size_t>(strnlen(reinterpret_cast<const char*>(s), room), 8));
    } else if (holds != KeyHolds::Stack) {
      w = r.key_number(k.offset);
      if (k.is_signed) w ^= uint64_t{1} << 63;  // two's complement order -> unsigned order
    }
  }
  return c.descending ? ~w : w;
}

// The order of one entry, precomputed so that most comparisons touch only
// this: the sort columns' words, then the first key bytes.
struct OrderItem {
  uint64_t word[3];
  uint32_t index;
};

bool words_less(const OrderItem& a, const OrderItem& b) {
  if (a.word[0] != b.word[0]) return a.word[0] < b.word[0];
  if (a.word[1] != b.word[1]) return a.word[1] < b.word[1];
  return a.word[2] < b.word[2];
}

// Ascending by the three words. Big tables go through an LSD radix sort
// (byte digits, a digit all items share is skipped: hitcounts of 1, small
// keys): a few ms for 100k entries, where comparison sorting took tens.
void sort_by_words(std::vector<OrderItem>& items) {
  if (items.size() < 1024) {
    std::sort(items.begin(), items.end(), words_less);
    return;
  }
  std::vector<OrderItem> sorted;
  sorted.reserve(items.size());
  populate_now(sorted.data(), items.size() * sizeof(OrderItem));
  sorted.resize(items.size());
  // The digits that differ between items, from one read of them: a digit
  // all items share orders nothing (hitcounts of 1, the zero bytes of small
  // keys, a word no sort column fills), and is neither counted nor passed.
  uint64_t any[3] = {0, 0, 0}, all[3] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
  for (const OrderItem& i : items)
    for (int w = 0; w < 3; ++w) {
      any[w] |= i.word[w];
      all[w] &= i.word[w];
    }
  struct Digit {
    int word;
    unsigned shift;
    std::array<size_t, 256> start{};
  };
  std::vector<Digit> digits;  // least significant first: the LSD order of the passes
  for (int w = 2; w >= 0; --w)
    for (unsigned d = 0; d < 8; ++d)
      if (((any[w] ^ all[w]) >> (8 * d)) & 0xff) digits.push_back(Digit{w, 8 * d});
  // One more read counts every one of them.
  for (const OrderItem& i : items)
    for (Digit& d : digits) ++d.start[(i.word[d.word] >> d.shift) & 0xff];
  for (Digit& d : digits) {
    size_t pos = 0;
    for (size_t& at : d.start) pos += std::exchange(at, pos);
    for (const OrderItem& i : items) sorted[d.start[(i.word[d.word] >> d.shift) & 0xff]++] = i;
    items.swap(sorted);
  }
}

}  // namespace

void sort_rows(Table& t) {
  std::vector<SortColumn> order = t.sort;
  if (order.empty()) order.push_back(SortColumn{SortColumn::Kind::Value, 0, false});
  order.resize(std::min<size_t>(order.size(), 2));
  // A string column's word holds only its first 8 bytes: the words after it
  // must not order what its full comparison has yet to decide.
  int exact_words = 0;
  for (const SortColumn& c : order) {
    if (c.kind == SortColumn::Kind::Key && key_traits(t.keys.at(c.index).display).holds == KeyHolds::String) break;
    ++exact_words;
  }
  const size_t n = t.entries();
  std::vector<OrderItem> items;
  items.reserve(n);
  populate_now(items.data(), n * sizeof(OrderItem));
  items.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Row r = t.row(i);
    OrderItem& it = items[i];
    it.word[0] = order_word(t, order[0], r);
    it.word[1] = exact_words > 0 && order.size() > 1 ? order_word(t, order[1], r) : 0;
    it.word[2] = exact_words > static_cast<int>(order.size()) - 1
                     ? byte_order_word(r.key.data(), std::min<size_t>(r.key.size(), 8))
                     : 0;
    it.index = static_cast<uint32_t>(i);
  }
  sort_by_words(items);
  // Equal words leave ties that only the full comparison orders: strings
  // longer than 8 bytes, keys longer than 8 bytes.
  auto full = [&](const OrderItem& a, const OrderItem& b) {
    const Row x = t.row(a.index), y = t.row(b.index);
    for (const SortColumn& c : order) {
      const int r = compare_column(t, c, x, y);
      if (r != 0) return c.descending ? r > 0 : r < 0;
    }
    return std::lexicographical_compare(x.key.begin(), x.key.end(), y.key.begin(), y.key.end());
  };
  for (auto run = items.begin(); run != items.end();) {
    auto end = std::find_if(run, items.end(),
                            [&](const OrderItem& i) { return std::memcmp(i.word, run->word, sizeof(i.word)) != 0; });
    if (end - run > 1) std::sort(run, end, full);
    run = end;
  }

  // Entries stay where they are; rows are found through the order.
  std::vector<uint32_t> sorted;
  sorted.reserve(n);
  populate_now(sorted.data(), n * sizeof(uint32_t));
  sorted.resize(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = static_cast<uint32_t>(t.stored_at(items[i].index));
  t.order = std::move(sorted);
}

}  // namespace histd::table
