// The kernel-facing half of the table stage: reads a table's BPF maps into a
// Table (batched lookups, per-CPU values merged) and clears them.
#pragma once

#include "histd/result.h"
#include "histd/table.h"

namespace histd::table {

// `columns` is the layout (HistPlan::columns()); rows and totals are filled
// in and sorted.
Expected<Table> read_table(int table_fd, int stats_fd, Table columns);

// Empties the table and zeroes its Hits/Dropped counters.
Status clear_table(int table_fd, int stats_fd, uint32_t key_size);

}  // namespace histd::table
