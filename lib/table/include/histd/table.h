// SPDX-License-Identifier: GPL-2.0-only
// Stage 6, table: BPF maps -> Table (rows of key bytes and merged values).
//
// The Table is self-describing: it carries its column descriptions (copied
// from the plan) so that render needs nothing else. Merging and sorting are
// pure; reading the maps needs root (see table_reader.h in lib/table).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
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

// What a key's bytes are.
enum class KeyHolds { Number, String, Stack };

// What the table, the planner and the code generator know of a display,
// one row each (lib/table/key_display.cpp); how each output prints it is
// render's row of the same display (lib/render/key_formats.cpp).
struct KeyDisplayTraits {
  KeyDisplay display = KeyDisplay::Decimal;
  KeyHolds holds = KeyHolds::Number;
  // A histogram's bucket: the key is the bucket (.log2: the exponent of
  // its upper bound; .buckets=N: its lower bound).
  bool bucketed = false;
  // Printed with the entry's comm, which the table then keeps (.execname).
  bool needs_comm = false;
  // Its label is the number itself, or a bucket: a table keyed only by such
  // keys is a series per entry in the metrics.
  bool numeric_label = false;
};
const KeyDisplayTraits& key_traits(KeyDisplay display);

// Whether a column may hold kernel addresses, which a reader who may not see
// them (render::Options::hide_kernel_addresses) is shown as 0.
enum class AddressKind {
  None,
  // unsigned long: what the kernel's events keep code addresses in
  // (call_site, ip), but also flags and counts (gfp_flags, nr_pages): an
  // address only when its value lies in the kernel half.
  Word,
  // A pointer, a stack frame, a .sym/.sym-offset key: an address whatever
  // its value, so a sum of them is hidden too.
  Pointer,
};

// The AddressKind of a field of C type `c_type` as a format file spells it
// ("unsigned long", "const void *", "struct sk_buff *"); None for the rest.
AddressKind address_kind(std::string_view c_type);

struct KeyColumn {
  std::string name;        // as printed: "call_site", "common_pid"
  uint32_t offset = 0;     // in Row::key
  uint32_t size = 8;       // bytes in Row::key (8 for numbers, N for strings)
  bool is_signed = false;  // numbers: compare as signed when sorting on this key
  KeyDisplay display = KeyDisplay::Decimal;
  uint64_t buckets = 0;  // for Buckets
  AddressKind address = AddressKind::None;
  // The width of the field the key is computed from: the range every
  // bucket of a .log2 or .buckets key spans, whether it was hit or not.
  uint32_t field_bits = 64;
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
  AddressKind address = AddressKind::None;
};

struct SortColumn {
  enum class Kind { Value, Key };
  Kind kind = Kind::Value;
  uint32_t index = 0;  // into Table::vals (0 = hitcount) or Table::keys
  bool descending = false;
  friend bool operator==(const SortColumn&, const SortColumn&) = default;
};

// One entry of a Table: views into the table's flat arrays, valid until the
// table changes.
struct Row {
  std::span<const uint8_t> key;    // Table::key_size bytes
  std::span<const uint64_t> vals;  // one per ValColumn; vals[0] is the hitcount
  std::string_view comm;           // for Execname keys: the comm captured at creation
  // onmax/onchange: the entry's variable record (the tracked value and the
  // saved fields, laid out as its plan says), empty when the table has none.
  std::span<const uint8_t> record;
  // The key's u64 at `offset` (numbers, stack frames); 0 past the key's end.
  // Inline: sorting and rendering a big table call it per entry and key.
  uint64_t key_number(uint32_t offset) const {
    uint64_t v = 0;
    if (offset + 8 <= key.size()) std::memcpy(&v, key.data() + offset, 8);
    return v;
  }
};

// Entries are stored column-wise, one allocation per array rather than a few
// per entry: a 100k-entry table is read, sorted and printed in tens of ms.
struct Table {
  std::vector<KeyColumn> keys;
  std::vector<ValColumn> vals;   // vals[0] is "hitcount"
  std::vector<SortColumn> sort;  // at most 2; empty means hitcount ascending
  uint32_t key_size = 0;
  bool nohitcount = false;  // do not print the hitcount column
  uint64_t hits = 0;
  uint64_t drops = 0;

  size_t entries() const { return n_entries; }
  Row row(size_t i) const;
  // Appends an entry: key_size key bytes (shorter ones are zero-filled) and
  // vals.size() values (missing ones are zero).
  void add(std::span<const uint8_t> key, std::span<const uint64_t> values, std::string_view comm = {});
  // Adds `values` to entry i's (u64 wrap-around, as the kernel's sums).
  void add_values(size_t i, std::span<const uint64_t> values);
  void reserve(size_t n);
  // Entry i's variable record; every record of a table has the size of the first.
  void set_record(size_t i, std::span<const uint8_t> record);

 private:
  friend void sort_rows(Table& table);
  size_t stored_at(size_t i) const;  // where entry i of the order is stored
  size_t n_entries = 0;
  std::vector<uint8_t> key_bytes;     // n_entries x key_size
  std::vector<uint64_t> val_words;    // n_entries x vals.size()
  std::vector<std::string> comms;     // per entry once any entry has a comm, else empty
  std::vector<uint8_t> record_bytes;  // n_entries x record_size once any entry has a record, else empty
  uint32_t record_size = 0;
  // The sorted order: entry i is stored at order[i] (empty: as added).
  // Sorting only writes this; the arrays stay where reading put them.
  std::vector<uint32_t> order;
};

// Adds up per-CPU copies of a value struct into `sum` (n_vals u64s). `buf`
// holds `ncpus` copies `cpu_stride` bytes apart (libbpf's layout for per-CPU
// map values: each copy rounded up to 8 bytes). Wraps like the kernel's u64 sums.
void merge_percpu(std::span<const uint8_t> buf, size_t n_vals, unsigned ncpus, size_t cpu_stride,
                  std::span<uint64_t> sum);

// Sorts rows as the kernel does: by the sort columns in order (sort within a
// sort), numbers compared with the key's signedness, strings with strcmp,
// values as u64; remaining ties broken by the key bytes (memcmp, ascending)
// so that output never depends on hash order.
void sort_rows(Table& table);

}  // namespace histd::table
