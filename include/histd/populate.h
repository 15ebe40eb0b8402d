// SPDX-License-Identifier: GPL-2.0-only
// Big read buffers: one call to fault them in instead of a fault per page.
#pragma once

#include <cstddef>

namespace histd {

// Faults [data, data + bytes) in with one MADV_POPULATE_WRITE, for buffers
// of a MiB or more that are about to be written end to end. A 100k-entry
// read after idle writes ~14 MB of pages the heap trim handed back, and on a
// VM a 4 KiB fault costs ~13 us (docs/design/reads.md, "Reading and
// rendering a table"). Advice, not a guarantee: errors are ignored.
void populate_now(const void* data, size_t bytes);

}  // namespace histd
