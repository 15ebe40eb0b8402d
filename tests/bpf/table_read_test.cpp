// SPDX-License-Identifier: GPL-2.0-only
// table::read_table on hashes big enough to be read by parts of their
// buckets at once: every entry once, with its sums, however the entries
// fall into the buckets (a sparse table's one batch runs past every part's
// end; a full one's batches end mid-part).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "histd/fd.h"
#include "histd/table_reader.h"

namespace histd::table {
namespace {

// Two u64 values an entry: CPU c of key k holds k + c and 1.
constexpr size_t kVals = 2;

class TableReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "SKIP: needs root";
    cpus_ = static_cast<unsigned>(libbpf_num_possible_cpus());
    // The stats map as the units make it: per CPU {hits, drops}.
    stats_ = Fd(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "hx_read_stats", 4, 16, 1, nullptr));
    ASSERT_TRUE(stats_) << "creating the stats map";
  }

  // A per-CPU hash of `size` entries holding the keys `keys`.
  Fd filled(uint32_t size, const std::vector<uint64_t>& keys, uint32_t key_size = 8) {
    Fd map(bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "hx_read_table", key_size, kVals * 8, size, nullptr));
    EXPECT_TRUE(map) << "creating the table map";
    std::vector<uint8_t> key(key_size);
    std::vector<uint64_t> value(kVals * cpus_);
    for (uint64_t k : keys) {
      std::memcpy(key.data(), &k, 8);
      for (unsigned c = 0; c < cpus_; ++c) {
        value[c * kVals] = k + c;
        value[c * kVals + 1] = 1;
      }
      EXPECT_EQ(bpf_map_update_elem(map.get(), key.data(), value.data(), BPF_NOEXIST), 0) << k;
    }
    return map;
  }

  Table columns(uint32_t key_size = 8) const {
    Table t;
    t.keys = {KeyColumn{"k", 0, 8}};
    t.vals = {ValColumn{"hitcount"}, ValColumn{"n"}};
    t.key_size = key_size;
    return t;
  }

  // The table read, as key -> {sum of column 0, sum of column 1}; every key once.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> read(const Fd& map, uint32_t size, uint32_t map_key_size = 8,
                                                         uint32_t row_key_size = 8) {
    const MapShape shape{MapShape::Kind::Hash, map_key_size, size, true, kVals * 8, 0};
    auto t = read_table(TableMaps{map.get(), stats_.get(), -1}, shape, columns(row_key_size));
    EXPECT_TRUE(t) << (t ? "" : t.error().context);
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> rows;
    for (size_t i = 0; t && i < t->entries(); ++i) {
      const Row r = t->row(i);
      EXPECT_TRUE(rows.emplace(r.key_number(0), std::make_pair(r.vals[0], r.vals[1])).second)
          << "key " << r.key_number(0) << " read twice";
    }
    return rows;
  }

  void expect_all(const std::map<uint64_t, std::pair<uint64_t, uint64_t>>& rows, const std::vector<uint64_t>& keys) {
    ASSERT_EQ(rows.size(), keys.size());
    for (uint64_t k : keys) {
      auto it = rows.find(k);
      ASSERT_NE(it, rows.end()) << "key " << k << " missing";
      EXPECT_EQ(it->second.first, k * cpus_ + cpus_ * (cpus_ - 1) / 2) << k;
      EXPECT_EQ(it->second.second, cpus_) << k;
    }
  }

  unsigned cpus_ = 1;
  Fd stats_;
};

std::vector<uint64_t> keys_from(uint64_t first, size_t n, uint64_t step = 1) {
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = first + i * step;
  return keys;
}

TEST_F(TableReadTest, ADenseHashIsReadWhole) {
  const std::vector<uint64_t> keys = keys_from(1, 100000);
  const Fd map = filled(131072, keys);
  expect_all(read(map, 131072), keys);
}

TEST_F(TableReadTest, AFullHashIsReadWhole) {
  const std::vector<uint64_t> keys = keys_from(7, 65536, 3);
  const Fd map = filled(65536, keys);
  expect_all(read(map, 65536), keys);
}

// A few thousand entries in 131072 buckets: the first part's one batch
// holds every entry, the other parts' the same entries again.
TEST_F(TableReadTest, ASparseHashIsReadOnce) {
  const std::vector<uint64_t> keys = keys_from(100, 3000, 17);
  const Fd map = filled(131072, keys);
  expect_all(read(map, 131072), keys);
  const Fd empty = filled(131072, {});
  EXPECT_TRUE(read(empty, 131072).empty());
}

// A map whose key is longer than the rows' is read in one part (rows could
// not tell its keys apart), and whole all the same.
TEST_F(TableReadTest, AKeyLongerThanTheRowsIsReadInOnePart) {
  const std::vector<uint64_t> keys = keys_from(1, 40000);
  const Fd map = filled(65536, keys, 16);
  expect_all(read(map, 65536, 16, 8), keys);
}

}  // namespace
}  // namespace histd::table
