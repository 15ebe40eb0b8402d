// SPDX-License-Identifier: GPL-2.0-only
#include "shed.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "histd/fd.h"

namespace histd::cc_server {

namespace {

struct Mapping {
  unsigned long start = 0;
  unsigned long end = 0;
  bool file = false;
  size_t rss_kib = 0;
  size_t anonymous_kib = 0;
};

// /proc/self/smaps read whole before anything changes: dropping pages while
// reading it would make the file's later lines describe a different state.
std::vector<Mapping> read_smaps() {
  std::vector<Mapping> out;
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (!f) return out;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long start = 0, end = 0, inode = 0;
    char perms[8] = {};
    // A mapping's first line: "start-end perms offset dev inode [path]"
    // (a field line such as "Anonymous: 0 kB" has no '-' after its name).
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %lu", &start, &end, perms, &inode) == 4) {
      // Only private file mappings; a shared one has no private copies but
      // is not ours to drop (histd-cc maps none).
      out.push_back({start, end, inode != 0 && perms[3] == 'p', 0, 0});
      continue;
    }
    if (out.empty()) continue;
    size_t kib = 0;
    if (std::sscanf(line, "Rss: %zu kB", &kib) == 1) out.back().rss_kib = kib;
    if (std::sscanf(line, "Anonymous: %zu kB", &kib) == 1) out.back().anonymous_kib = kib;
  }
  std::fclose(f);
  return out;
}

}  // namespace

Shed shed_memory() {
  Shed shed;
  std::vector<Mapping> droppable;
  for (const Mapping& m : read_smaps()) {
    if (!m.file || m.rss_kib == 0 || m.anonymous_kib != 0) continue;
    droppable.push_back(m);
    const std::vector<PageRun> runs = mapped_runs(m.start, m.end);
    shed.dropped.insert(shed.dropped.end(), runs.begin(), runs.end());
  }
  malloc_trim(0);
  // Nothing but the drops from here: code run after its mapping was
  // dropped (libc's, this file's) would be faulted straight back in.
  for (const Mapping& m : droppable) {
    if (madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) != 0) continue;
    ++shed.mappings;
    shed.bytes += m.rss_kib * 1024;
  }
  return shed;
}

std::vector<PageRun> mapped_runs(unsigned long start, unsigned long end) {
  std::vector<PageRun> runs;
  const unsigned long page = static_cast<unsigned long>(sysconf(_SC_PAGESIZE));
  const size_t pages = (end - start) / page;
  // One 64-bit entry a page, at the page's number; bit 63: present in RAM.
  std::vector<uint64_t> entries(pages);
  const histd::Fd pagemap(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  const ssize_t want = static_cast<ssize_t>(pages * sizeof(uint64_t));
  if (!pagemap || pread(pagemap.get(), entries.data(), want, (start / page) * sizeof(uint64_t)) != want) return runs;
  for (size_t i = 0; i < pages; ++i) {
    if (!(entries[i] >> 63)) continue;
    const unsigned long at = start + i * page;
    if (!runs.empty() && runs.back().end == at) {
      runs.back().end = at + page;
    } else {
      runs.push_back({at, at + page});
    }
  }
  return runs;
}

void read_ahead(const std::vector<PageRun>& runs) {
  // The kernel reads at most the device's readahead size a call (128 KiB
  // by default; 8 MiB on some virtual disks) and ignores the rest.
  constexpr unsigned long kPiece = 128 * 1024;
  for (const PageRun& r : runs) {
    for (unsigned long at = r.start; at < r.end; at += kPiece) {
      madvise(reinterpret_cast<void*>(at), std::min(kPiece, r.end - at), MADV_WILLNEED);
    }
  }
}

}  // namespace histd::cc_server
