// Stage 6, table: BPF maps -> Table (rows of key bytes and merged values).
//
// The Table is self-describing: it carries its column descriptions (copied
// from the plan) so that render needs nothing else. Merging and sorting are
// pure; reading the maps needs root (see table_reader.h in lib/table).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace histd::table {

enum class KeyDisplay {
  Decimal,     // "%s: %10llu"
  Hex,         // "%s: %llx"
  Sym,         // "%s: [%llx] %-45s"
  SymOffset,   // "%s: [%llx] %-55s"
  Execname,    // "%s: %-16s[%10llu]"
  Syscall,     // "%s: %-30s[%3llu]"
  Log2,        // "%s: ~ 2^%-2llu"
  Buckets,     // "%s: ~ %llu-%llu"
  String,      // "%s: %-50s"
  Stacktrace,  // "%s:\n" then frames
};

struct KeyColumn {
  std::string name;        // as printed: "call_site", "common_pid"
  uint32_t offset = 0;     // in Row::key
  uint32_t size = 8;       // bytes in Row::key (8 for numbers, N for strings)
  bool is_signed = false;  // numbers: compare as signed when sorting on this key
  KeyDisplay display = KeyDisplay::Decimal;
  uint64_t buckets = 0;    // for Buckets
};

enum class ValDisplay {
  Decimal,  // " %s: %10llu"
  Hex,      // " %s: %10llx"
  Percent,  // " %s (%%): %3u.%02u" of the column total
  Graph,    // " %s: %20s", a bar of '#' scaled to the column maximum
};

struct ValColumn {
  std::string name;  // "hitcount", "bytes_req"
  ValDisplay display = ValDisplay::Decimal;
  bool printed = true;  // variables and expressions are summed but not printed
};

struct SortColumn {
  enum class Kind { Value, Key };
  Kind kind = Kind::Value;
  uint32_t index = 0;  // into Table::vals (0 = hitcount) or Table::keys
  bool descending = false;
  friend bool operator==(const SortColumn&, const SortColumn&) = default;
};

struct Row {
  std::vector<uint8_t> key;     // Table::key_size bytes
  std::vector<uint64_t> vals;   // one per ValColumn; vals[0] is the hitcount
  std::string comm;             // for Execname keys: the comm captured at creation
  std::string tracking;         // onmax/onchange: "\n\tmax: ..." and saved fields, printed after the values
};

struct Table {
  std::vector<KeyColumn> keys;
  std::vector<ValColumn> vals;  // vals[0] is "hitcount"
  std::vector<SortColumn> sort; // at most 2; empty means hitcount ascending
  uint32_t key_size = 0;
  bool nohitcount = false;      // do not print the hitcount column
  std::vector<Row> rows;
  uint64_t hits = 0;
  uint64_t drops = 0;
};

// Sums per-CPU copies of a value struct of `n_vals` u64s. `buf` holds
// `ncpus` copies, each rounded up to 8 bytes (libbpf's layout for per-CPU
// map values).
std::vector<uint64_t> merge_percpu(std::span<const uint8_t> buf, size_t n_vals, unsigned ncpus);

// Sorts rows as the kernel does: by the sort columns in order (sort within a
// sort), numbers compared with the key's signedness, strings with strcmp,
// values as u64; remaining ties broken by the key bytes (memcmp, ascending)
// so that output never depends on hash order.
void sort_rows(Table& table);

}  // namespace histd::table
