#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "histd/table_reader.h"
#include "hist_shared.h"

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
    t.drops += s.drops;
  }
  return ok_status();
}

bool saves_comm(const Table& t) {
  for (const KeyColumn& k : t.keys)
    if (k.display == KeyDisplay::Execname) return true;
  return false;
}

constexpr size_t kCommSize = 16;

}  // namespace

Expected<Table> read_table(int table_fd, int stats_fd, MapShape shape, Table t) {
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

  // Batches of up to 4096 entries; the batch token of a hash map is a u32
  // bucket index, but libbpf sizes it by the key, so give it room for both.
  const uint32_t batch = 4096;
  std::vector<uint8_t> keys(batch * key_size);
  std::vector<uint8_t> values(batch * value_stride);
  std::vector<uint8_t> token_in(std::max<size_t>(key_size, 8));
  std::vector<uint8_t> token_out(std::max<size_t>(key_size, 8));
  bool first = true;
  for (;;) {
    uint32_t count = batch;
    int err = bpf_map_lookup_batch(table_fd, first ? nullptr : token_in.data(), token_out.data(), keys.data(),
                                   values.data(), &count, nullptr);
    const int e = err ? errno : 0;
    if (err && e != ENOENT) return fail(ErrorKind::Bpf, e, std::string("reading table: ") + std::strerror(e));
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t* value = values.data() + i * value_stride;
      merge_percpu({value, value_stride}, n_vals, ncpus, cpu_stride, sum);
      std::string_view comm;
      // Only the CPU that created the entry holds its comm.
      for (unsigned cpu = 0; has_comm && comm.empty() && cpu < ncpus; ++cpu) {
        const char* c = reinterpret_cast<const char*>(value + cpu * cpu_stride + n_vals * 8);
        comm = std::string_view(c, strnlen(c, kCommSize));
      }
      if (!slots) {
        t.add({keys.data() + i * key_size, key_size}, sum, comm);
        continue;
      }
      // A slot is an entry once counted; its key is the slot's number.
      if (n_vals == 0 || sum[0] == 0) continue;
      uint32_t index = 0;
      std::memcpy(&index, keys.data() + i * key_size, sizeof(index));
      const uint64_t number = index;
      std::memcpy(slot_key.data(), &number, std::min<size_t>(sizeof(number), slot_key.size()));
      t.add(slot_key, sum, comm);
    }
    if (e == ENOENT) break;
    token_in = token_out;
    first = false;
  }
  auto st = read_stats(stats_fd, t);
  if (!st) return unexpected(std::move(st).error());
  sort_rows(t);
  return t;
}

Status clear_table(int table_fd, int stats_fd, MapShape shape) {
  if (shape.kind == MapShape::Kind::Slots) {
    // Array slots cannot be deleted: zeroed, they are no entries.
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(table_fd, &info, &len) != 0) return fail_errno("clearing table");
    const size_t value_size = (info.value_size + 7) / 8 * 8;
    std::vector<uint32_t> keys(shape.entries);
    for (uint32_t i = 0; i < shape.entries; ++i) keys[i] = i;
    std::vector<uint8_t> zeros(value_size * possible_cpus() * shape.entries);
    uint32_t count = shape.entries;
    if (bpf_map_update_batch(table_fd, keys.data(), zeros.data(), &count, nullptr) != 0)
      return fail_errno("clearing table");
  } else {
    std::vector<uint8_t> next(shape.key_size);
    // Deleting while walking restarts from the beginning each time: keys may be
    // added concurrently, and get_next_key on a deleted key restarts anyway.
    while (bpf_map_get_next_key(table_fd, nullptr, next.data()) == 0) {
      if (bpf_map_delete_elem(table_fd, next.data()) != 0 && errno != ENOENT) return fail_errno("clearing table");
    }
  }
  const unsigned ncpus = possible_cpus();
  std::vector<histd_table_stats> zeros(ncpus);
  uint32_t zero = 0;
  if (bpf_map_update_elem(stats_fd, &zero, zeros.data(), BPF_ANY) != 0) return fail_errno("clearing table stats");
  return ok_status();
}

}  // namespace histd::table
