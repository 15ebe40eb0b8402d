// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hist_shared.h"
#include "histd/table_reader.h"

namespace histd::table {

namespace {

unsigned possible_cpus() {
  int n = libbpf_num_possible_cpus();
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

Status read_stats(int stats_fd, Table& t) {
  const unsigned ncpus = possible_cpus();
  std::vector<histd_table_stats> per_cpu(ncpus);
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(stats_fd, &zero, per_cpu.data()) != 0) return fail_errno("reading table stats");
  for (const histd_table_stats& s : per_cpu) {
    t.hits += s.hits;
    t.drops += histd_drops(&s);
  }
  return ok_status();
}

bool saves_comm(const Table& t) {
  for (const KeyColumn& k : t.keys)
    if (key_traits(k.display).needs_comm) return true;
  return false;
}

constexpr size_t kCommSize = 16;

// No more buckets after the last batch.
constexpr uint32_t kEnd = UINT32_MAX;

// The entries of a map with bpf_map_lookup_batch, `batch` entries at a
// time; `each(key, value)` per entry, the value being every CPU's copy for
// a per-CPU map, and `done(start, end)` after each batch with the tokens
// around it. A hash map's token is the index of a bucket (libbpf sizes it
// by the key, so it gets room for both): its read starts at bucket `from`
// and stops at the first batch that reaches `until` (that batch may hold
// entries of buckets past it); the last batch ends at kEnd. Other maps are
// read from their start (`from` 0) to their end.
template <typename Each, typename Done>
Status for_each_entry(int fd, size_t key_size, size_t value_stride, uint32_t batch, uint32_t from, uint32_t until,
                      Each&& each, Done&& done) {
  std::vector<uint8_t> keys(batch * key_size);
  std::vector<uint8_t> values(batch * value_stride);
  std::vector<uint8_t> token_in(std::max<size_t>(key_size, 8));
  std::vector<uint8_t> token_out(std::max<size_t>(key_size, 8));
  std::memcpy(token_in.data(), &from, sizeof(from));
  for (uint32_t start = from, calls = 0;; ++calls) {
    uint32_t count = batch;
    // No token at a read's start from 0: an array's token is a key it has read.
    const bool tokenless = calls == 0 && from == 0;
    int err = bpf_map_lookup_batch(fd, tokenless ? nullptr : token_in.data(), token_out.data(), keys.data(),
                                   values.data(), &count, nullptr);
    const int e = err ? errno : 0;
    if (err && e != ENOENT) return fail(ErrorKind::Bpf, e, std::string("reading table: ") + std::strerror(e));
    for (uint32_t i = 0; i < count; ++i)
      each(std::span<const uint8_t>(keys.data() + i * key_size, key_size),
           std::span<const uint8_t>(values.data() + i * value_stride, value_stride));
    uint32_t end = kEnd;
    if (e != ENOENT) std::memcpy(&end, token_out.data(), sizeof(end));
    done(start, end);
    if (end == kEnd || end >= until) return ok_status();
    token_in = token_out;
    start = end;
  }
}

// Key bytes as a string, looked up by view.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
};
using HeldValues = std::unordered_map<std::string, std::vector<uint64_t>, KeyHash, std::equal_to<>>;
using KeySet = std::unordered_set<std::string, KeyHash, std::equal_to<>>;

// Adds the values held in hot slots to their keys' entries. A slot's key
// is in the hash before the slot takes it; one that is not (the table was
// cleared while an event was filling the slot) is an entry of its own.
Status merge_hot_slots(int hot_fd, const MapShape& shape, Table& t) {
  const unsigned ncpus = possible_cpus();
  const size_t key_size = t.key_size, n_vals = t.vals.size();
  const size_t cpu_stride = key_size + n_vals * 8 + 8;  // key, values, standing: all u64 words
  HeldValues held;
  auto st = for_each_entry(
      hot_fd, sizeof(uint32_t), cpu_stride * ncpus, shape.hot_slots, 0, kEnd,
      [&](std::span<const uint8_t>, std::span<const uint8_t> value) {
        for (unsigned cpu = 0; cpu < ncpus; ++cpu) {
          const uint8_t* slot = value.data() + cpu * cpu_stride;
          uint64_t standing = 0;
          std::memcpy(&standing, slot + key_size + n_vals * 8, 8);
          if (standing == 0) continue;  // free
          std::vector<uint64_t>& sum = held[std::string(reinterpret_cast<const char*>(slot), key_size)];
          sum.resize(n_vals);
          for (size_t k = 0; k < n_vals; ++k) {
            uint64_t v = 0;
            std::memcpy(&v, slot + key_size + k * 8, 8);
            sum[k] += v;
          }
        }
      },
      [](uint32_t, uint32_t) {});
  if (!st) return st;
  // At most slots x CPUs keys: one pass over the entries finds theirs.
  for (size_t i = 0; i < t.entries() && !held.empty(); ++i) {
    const Row row = t.row(i);
    auto it = held.find(std::string_view(reinterpret_cast<const char*>(row.key.data()), row.key.size()));
    if (it == held.end()) continue;
    t.add_values(i, it->second);
    held.erase(it);
  }
  for (const auto& [key, values] : held)
    if (n_vals > 0 && values[0] > 0) t.add(std::span(reinterpret_cast<const uint8_t*>(key.data()), key.size()), values);
  return ok_status();
}

// How a table map's entries become rows.
struct Layout {
  unsigned ncpus;
  size_t n_vals;
  bool has_comm;
  size_t cpu_stride;  // each CPU's copy of a value
  size_t value_stride;
  bool slots;
  size_t key_size;  // of the map
};

Layout layout_of(const MapShape& shape, const Table& t) {
  Layout l{};
  l.ncpus = shape.per_cpu ? possible_cpus() : 1;
  l.n_vals = t.vals.size();
  l.has_comm = saves_comm(t);
  // The u64 columns, then the comm if kept (then the variable record, which
  // is not read here).
  l.cpu_stride = ((std::max<size_t>(shape.value_size, l.n_vals * 8 + (l.has_comm ? kCommSize : 0)) + 7) / 8) * 8;
  l.value_stride = l.cpu_stride * l.ncpus;
  l.slots = shape.kind == MapShape::Kind::Slots;
  l.key_size = shape.key_size;
  return l;
}

// One batch of a read: the tokens around it, and the row count after it.
struct Batch {
  uint32_t start;
  uint32_t end;
  size_t rows_end;
};

// The entries of buckets [from, until) (and those of the last batch past
// it) as rows of `t`, each batch noted in `batches`.
Status read_rows(int fd, const Layout& l, uint32_t from, uint32_t until, Table& t, std::vector<Batch>& batches) {
  std::vector<uint64_t> sum(l.n_vals);
  std::vector<uint8_t> slot_key(t.key_size);
  // Batches of up to 4096 entries.
  return for_each_entry(
      fd, l.key_size, l.value_stride, 4096, from, until,
      [&](std::span<const uint8_t> key, std::span<const uint8_t> value) {
        merge_percpu(value, l.n_vals, l.ncpus, l.cpu_stride, sum);
        std::string_view comm;
        // Only the CPU that created the entry holds its comm.
        for (unsigned cpu = 0; l.has_comm && comm.empty() && cpu < l.ncpus; ++cpu) {
          const char* c = reinterpret_cast<const char*>(value.data() + cpu * l.cpu_stride + l.n_vals * 8);
          comm = std::string_view(c, strnlen(c, kCommSize));
        }
        if (!l.slots) {
          t.add(key, sum, comm);
          return;
        }
        // A slot is an entry once counted; its key is the slot's number.
        if (l.n_vals == 0 || sum[0] == 0) return;
        uint32_t index = 0;
        std::memcpy(&index, key.data(), sizeof(index));
        const uint64_t number = index;
        std::memcpy(slot_key.data(), &number, std::min<size_t>(sizeof(number), slot_key.size()));
        t.add(slot_key, sum, comm);
      },
      [&](uint32_t start, uint32_t end) {
        batches.push_back(Batch{start, end, t.entries()});
      });
}

// A share of a big hash's buckets, read on a thread of its own.
struct Part {
  uint32_t from = 0;
  uint32_t until = kEnd;
  Table rows;
  std::vector<Batch> batches;
  Status status = ok_status();
};

std::string_view key_text(const Row& r) {
  return std::string_view(reinterpret_cast<const char*>(r.key.data()), r.key.size());
}

// The keys of the rows of a read's last batch.
KeySet last_batch_keys(const Table& t, const std::vector<Batch>& batches) {
  KeySet keys;
  if (batches.empty()) return keys;
  for (size_t i = batches.size() > 1 ? batches[batches.size() - 2].rows_end : 0; i < batches.back().rows_end; ++i)
    keys.emplace(key_text(t.row(i)));
  return keys;
}

// Adds the rows of the parts after the first to `t`, which holds the
// first's (read as `first`). A part's last batch may run past its buckets
// into the next parts': the rows of buckets read already are skipped, a
// whole batch's by its tokens, those of a batch that straddles the buckets
// read by their keys, which are the last batch's of the part that read
// furthest (a hash's keys are unique).
void merge_parts(Table& t, const std::vector<Batch>& first, const std::vector<Part>& parts) {
  uint32_t covered = first.empty() ? 0 : first.back().end;
  KeySet edge = last_batch_keys(t, first);
  for (size_t k = 1; k < parts.size(); ++k) {
    const Part& p = parts[k];
    size_t i = 0;
    for (const Batch& b : p.batches)
      for (; i < b.rows_end; ++i) {
        const Row r = p.rows.row(i);
        if (b.end <= covered || (b.start < covered && edge.contains(key_text(r)))) continue;
        t.add(r.key, r.vals, r.comm);
      }
    if (!p.batches.empty() && p.batches.back().end > covered) {
      covered = p.batches.back().end;
      edge = last_batch_keys(p.rows, p.batches);
    }
  }
}

// The threads a hash of `buckets` buckets is read by: a few, while each
// reads enough to pay for its start.
size_t parts_for(uint64_t buckets) {
  constexpr uint64_t kMinBuckets = 16384;
  constexpr size_t kMaxParts = 4;
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min<size_t>({kMaxParts, cpus, static_cast<size_t>(buckets / kMinBuckets)}));
}

// A big hash read by parts of its buckets at once: the kernel's batch read
// walks every bucket and copies each CPU's value of each entry, most of a
// 100k-entry read's time, which is then shared by the machine's CPUs.
Status read_parts(int fd, const Layout& l, uint32_t buckets, size_t n, Table& t) {
  std::vector<Part> parts(n);
  for (size_t k = 0; k < n; ++k) {
    parts[k].from = static_cast<uint32_t>(buckets / n * k);
    parts[k].until = k + 1 < n ? static_cast<uint32_t>(buckets / n * (k + 1)) : kEnd;
    if (k == 0) continue;
    // The columns (no rows yet), and room for a share and a quarter: grown
    // by doubling, a share's rows would leave as much again freed behind.
    parts[k].rows = t;
    parts[k].rows.reserve(buckets / n + buckets / n / 4);
  }
  // Nothing may leave a part's read but its status: a thread still running
  // when this returned would end the process.
  auto read_part = [&](Part& p, Table& rows) {
    try {
      p.status = read_rows(fd, l, p.from, p.until, rows, p.batches);
    } catch (const std::bad_alloc&) {
      p.status = fail(ErrorKind::System, ENOMEM, "reading table: out of memory");
    } catch (const std::exception& e) {
      p.status = fail(ErrorKind::System, EIO, std::string("reading table: ") + e.what());
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t k = 1; k < n; ++k) {
    try {
      threads.emplace_back(read_part, std::ref(parts[k]), std::ref(parts[k].rows));
    } catch (const std::system_error&) {
      read_part(parts[k], parts[k].rows);  // no thread to be had: read here, after the others
    }
  }
  read_part(parts[0], t);
  for (std::thread& th : threads) th.join();
  for (const Part& p : parts)
    if (!p.status) return p.status;
  merge_parts(t, parts[0].batches, parts);
  return ok_status();
}

}  // namespace

Expected<Table> read_table(TableMaps maps, MapShape shape, Table t) {
  const Layout l = layout_of(shape, t);
  // A hash has a power of two buckets, its entries' at least. The parts
  // compare rows by key: only when the map's key is the row's whole.
  const uint64_t buckets = std::bit_ceil(uint64_t{std::max<uint32_t>(shape.entries, 1)});
  const size_t parts = !l.slots && shape.key_size == t.key_size ? parts_for(buckets) : 1;
  // Room for a full table up front: growing would copy the arrays into fresh
  // pages; what stays unused is never touched.
  t.reserve(shape.entries);
  std::vector<Batch> batches;
  Status read = parts > 1 ? read_parts(maps.table, l, static_cast<uint32_t>(buckets), parts, t)
                          : read_rows(maps.table, l, 0, kEnd, t, batches);
  if (!read) return unexpected(std::move(read).error());
  if (maps.hot >= 0 && shape.hot_slots > 0) {
    auto hot = merge_hot_slots(maps.hot, shape, t);
    if (!hot) return unexpected(std::move(hot).error());
  }
  auto st = read_stats(maps.stats, t);
  if (!st) return unexpected(std::move(st).error());
  sort_rows(t);
  return t;
}

namespace {

// Array slots cannot be deleted: zeroed, they hold no entry.
Status zero_array(int fd, uint32_t entries) {
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return fail_errno("clearing table");
  const size_t value_size = (info.value_size + 7) / 8 * 8;
  std::vector<uint32_t> keys(entries);
  for (uint32_t i = 0; i < entries; ++i) keys[i] = i;
  std::vector<uint8_t> zeros(value_size * possible_cpus() * entries);
  uint32_t count = entries;
  if (bpf_map_update_batch(fd, keys.data(), zeros.data(), &count, nullptr) != 0) return fail_errno("clearing table");
  return ok_status();
}

}  // namespace

Status clear_table(TableMaps maps, MapShape shape) {
  if (shape.kind == MapShape::Kind::Slots) {
    auto st = zero_array(maps.table, shape.entries);
    if (!st) return st;
  } else {
    std::vector<uint8_t> next(shape.key_size);
    // Deleting while walking restarts from the beginning each time: keys may be
    // added concurrently, and get_next_key on a deleted key restarts anyway.
    while (bpf_map_get_next_key(maps.table, nullptr, next.data()) == 0) {
      if (bpf_map_delete_elem(maps.table, next.data()) != 0 && errno != ENOENT) return fail_errno("clearing table");
    }
  }
  if (maps.hot >= 0 && shape.hot_slots > 0) {
    auto st = zero_array(maps.hot, shape.hot_slots);
    if (!st) return st;
  }
  const unsigned ncpus = possible_cpus();
  std::vector<histd_table_stats> zeros(ncpus);
  uint32_t zero = 0;
  if (bpf_map_update_elem(maps.stats, &zero, zeros.data(), BPF_ANY) != 0) return fail_errno("clearing table stats");
  return ok_status();
}

}  // namespace histd::table
