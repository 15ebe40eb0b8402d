// SPDX-License-Identifier: GPL-2.0-only
#include "histd/populate.h"

#include <sys/mman.h>

#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack it
#endif

namespace histd {

void populate_now(const void* data, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  if (!data || bytes < (size_t{1} << 20)) return;
  // Whole pages inside the buffer only: the ones at its ends may be shared
  // with other allocations, which get touched when used anyway.
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

}  // namespace histd
