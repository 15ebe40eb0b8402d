// Big read buffers on transparent huge pages.
#pragma once

#include <cstddef>

namespace histd {

// Asks for transparent huge pages (MADV_HUGEPAGE) on the 2 MiB regions that
// hold [data, data + bytes), for buffers of a MiB or more: a 100k-entry read
// touches ~14 MB of fresh pages, and one fault per 2 MiB instead of per
// 4 KiB is most of the first read after idle on a VM where a fault costs
// ~13 us (docs/design.md, "Reading and rendering a table"). Neighbouring
// heap memory in those regions is advised too, which only means that it may
// also be backed by a huge page. Advice, not a guarantee: errors are ignored.
void prefer_huge_pages(const void* data, size_t bytes);

}  // namespace histd
