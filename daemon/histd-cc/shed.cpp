#include "shed.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cstdio>
#include <vector>

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
  malloc_trim(0);
  Shed shed;
  for (const Mapping& m : read_smaps()) {
    if (!m.file || m.rss_kib == 0 || m.anonymous_kib != 0) continue;
    if (madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) != 0) continue;
    ++shed.mappings;
    shed.bytes += m.rss_kib * 1024;
  }
  return shed;
}

}  // namespace histd::cc_server
