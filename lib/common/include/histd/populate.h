// SPDX-License-Identifier: GPL-2.0-only
// Big read buffers: one call to fault them in instead of a fault per page.
#pragma once

#include <cstddef>

namespace histd {

// Faults [data, data + bytes) in with one MADV_POPULATE_WRITE, for buffers
// of a MiB or more that are about to be written end to end: a big read
// after idle writes megabytes of pages the heap trim handed back, each a
// fault of its own otherwise (docs/design/reads.md, "Reading and rendering
// a table", has the figures). Advice, not a guarantee: errors are ignored.
void populate_now(const void* data, size_t bytes);

}  // namespace histd
