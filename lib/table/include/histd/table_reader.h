// SPDX-License-Identifier: GPL-2.0-only
// The kernel-facing half of the table stage: reads a table's BPF maps into a
// Table (batched lookups, per-CPU values merged) and clears them.
#pragma once

#include "histd/result.h"
#include "histd/table.h"

namespace histd::table {

// The table map: a hash keyed by the entries' key bytes, or an array of
// slots whose index is the only key's number (plan::TableMap::Log2Slots),
// where a slot with a zero hitcount is no entry.
struct MapShape {
  enum class Kind { Hash, Slots } kind = Kind::Hash;
  uint32_t key_size = 0;    // of the map: the key struct's, or 4 for slots
  uint32_t entries = 0;     // of the map
  bool per_cpu = true;      // a copy of each value per possible CPU, summed on reading
  uint32_t value_size = 0;  // of the map: the values (and comm), perhaps more after them
  // Hot slots in front of a per-CPU hash (plan::HistPlan::hot_slots): a
  // per-CPU array of {key, one u64 per value, standing}; 0: none.
  uint32_t hot_slots = 0;
};

// A table's maps: the table, its {hits, drops} and its hot slots (-1: none).
struct TableMaps {
  int table = -1;
  int stats = -1;
  int hot = -1;
};

// `columns` is the layout (HistPlan::columns()); rows and totals are filled
// in and sorted. The values in hot slots are added to their keys' entries;
// the hash is read first, so an event moving a slot's values into the hash
// meanwhile is missed by this read rather than counted twice.
Expected<Table> read_table(TableMaps maps, MapShape shape, Table columns);

// Empties the table (and its hot slots) and zeroes its Hits/Dropped counters.
Status clear_table(TableMaps maps, MapShape shape);

}  // namespace histd::table
