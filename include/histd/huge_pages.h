// Big read buffers: fewer page faults.
#pragma once

#include <cstddef>

namespace histd {

// For buffers of a MiB or more. A 100k-entry read touches ~14 MB of pages
// that the heap trim after idle handed back, and on a VM a 4 KiB fault costs
// ~13 us (docs/design.md, "Reading and rendering a table"):
// - prefer_huge_pages asks for transparent huge pages (MADV_HUGEPAGE) on the
//   2 MiB regions holding the buffer, for buffers reserved ahead whose end
//   may stay untouched; neighbouring heap memory in those regions may then
//   be backed by a huge page too;
// - populate_now also faults the whole buffer in with one call
//   (MADV_POPULATE_WRITE), for buffers about to be written end to end.
// Advice, not a guarantee: errors are ignored.
void prefer_huge_pages(const void* data, size_t bytes);
void populate_now(const void* data, size_t bytes);

}  // namespace histd
