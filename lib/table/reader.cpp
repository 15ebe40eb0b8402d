// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
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

// One map's whole contents with bpf_map_lookup_batch, `batch` entries at a
// time; `each(key, value)` per entry, the value being every CPU's copy for a
// per-CPU map. The batch token of a hash map is a u32 bucket index, but
// libbpf sizes it by the key, so it gets room for both.
template <typename Each>
Status for_each_entry(int fd, size_t key_size, size_t value_stride, uint32_t batch, Each&& each) {
  std::vector<uint8_t> keys(batch * key_size);
  std::vector<uint8_t> values(batch * value_stride);
  std::vector<uint8_t> token_in(std::max<size_t>(key_size, 8));
  std::vector<uint8_t> token_out(std::max<size_t>(key_size, 8));
  bool first = true;
  for (;;) {
    uint32_t count = batch;
    int err = bpf_map_lookup_batch(fd, first ? nullptr : token_in.data(), token_out.data(), keys.data(), values.data(),
                                   &count, nullptr);
    const int e = err ? errno : 0;
    if (err && e != ENOENT) return fail(ErrorKind::Bpf, e, std::string("reading table: ") + std::strerror(e));
    for (uint32_t i = 0; i < count; ++i)
      each(std::span<const uint8_t>(keys.data() + i * key_size, key_size),
           std::span<const uint8_t>(values.data() + i * value_stride, value_stride));
    if (e == ENOENT) return ok_status();
    token_in = token_out;
    first = false;
  }
}

// Key bytes as a string, looked up by view.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
};
using HeldValues = std::unordered_map<std::string, std::vector<uint64_t>, KeyHash, std::equal_to<>>;

// Adds the values held in hot slots to their keys' entries. A slot's key
// is in the hash before the slot takes it; one that is not (the table was
// cleared while an event was filling the slot) is an entry of its own.
Status merge_hot_slots(int hot_fd, const MapShape& shape, Table& t) {
  const unsigned ncpus = possible_cpus();
  const size_t key_size = t.key_size, n_vals = t.vals.size();
  const size_t cpu_stride = key_size + n_vals * 8 + 8;  // key, values, standing: all u64 words
  HeldValues held;
  auto st = for_each_entry(hot_fd, sizeof(uint32_t), cpu_stride * ncpus, shape.hot_slots,
                           [&](std::span<const uint8_t>, std::span<const uint8_t> value) {
                             for (unsigned cpu = 0; cpu < ncpus; ++cpu) {
                               const uint8_t* slot = value.data() + cpu * cpu_stride;
                               uint64_t standing = 0;
                               std::memcpy(&standing, slot + key_size + n_vals * 8, 8);
                               if (standing == 0) continue;  // free
                               std::vector<uint64_t>& sum =
                                   held[std::string(reinterpret_cast<const char*>(slot), key_size)];
                               sum.resize(n_vals);
                               for (size_t k = 0; k < n_vals; ++k) {
                                 uint64_t v = 0;
                                 std::memcpy(&v, slot + key_size + k * 8, 8);
                                 sum[k] += v;
                               }
                             }
                           });
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

}  // namespace

Expected<Table> read_table(TableMaps maps, MapShape shape, Table t) {
  const unsigned ncpus = shape.per_cpu ? possible_cpus() : 1;
  const size_t n_vals = t.vals.size();
  const bool has_comm = saves_comm(t);
  // Each CPU's copy of a value: the u64 columns, then the comm if kept (then
  // the variable record, which is not read here).
  const size_t cpu_stride = ((std::max<size_t>(shape.value_size, n_vals * 8 + (has_comm ? kCommSize : 0)) + 7) / 8) * 8;
  const size_t value_stride = cpu_stride * ncpus;
  const bool slots = shape.kind == MapShape::Kind::Slots;
  const size_t key_size = shape.key_size;
  std::vector<uint64_t> sum(n_vals);
  std::vector<uint8_t> slot_key(t.key_size);
  // Room for a full table up front: growing would copy the arrays into fresh
  // pages; what stays unused is never touched.
  t.reserve(shape.entries);

  // Batches of up to 4096 entries.
  auto read = for_each_entry(
      maps.table, key_size, value_stride, 4096, [&](std::span<const uint8_t> key, std::span<const uint8_t> value) {
        merge_percpu(value, n_vals, ncpus, cpu_stride, sum);
        std::string_view comm;
        // Only the CPU that created the entry holds its comm.
        for (unsigned cpu = 0; has_comm && comm.empty() && cpu < ncpus; ++cpu) {
          const char* c = reinterpret_cast<const char*>(value.data() + cpu * cpu_stride + n_vals * 8);
          comm = std::string_view(c, strnlen(c, kCommSize));
        }
        if (!slots) {
          t.add(key, sum, comm);
          return;
        }
        // A slot is an entry once counted; its key is the slot's number.
        if (n_vals == 0 || sum[0] == 0) return;
        uint32_t index = 0;
        std::memcpy(&index, key.data(), sizeof(index));
        const uint64_t number = index;
        std::memcpy(slot_key.data(), &number, std::min<size_t>(sizeof(number), slot_key.size()));
        t.add(slot_key, sum, comm);
      });
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
