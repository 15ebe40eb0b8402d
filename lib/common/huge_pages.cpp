#include "histd/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace histd {

void prefer_huge_pages(const void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (!data || bytes < (size_t{1} << 20)) return;
  const auto begin = reinterpret_cast<uintptr_t>(data) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes + kHuge - 1) & ~(kHuge - 1);
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace histd
