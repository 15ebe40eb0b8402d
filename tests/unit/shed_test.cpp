// SPDX-License-Identifier: GPL-2.0-only
// histd-cc's shed: which pages it records as dropped, and that reading them
// ahead brings a file's pages back into the page cache without mapping
// them. No root, no compiler; the shed itself is tested through histd
// (tests/e2e/test_compiler_shed.sh).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "histd-cc/shed.h"

namespace histd::cc_server {
namespace {

const unsigned long kPage = static_cast<unsigned long>(sysconf(_SC_PAGESIZE));

// A private anonymous mapping of `pages` pages, none of them touched.
struct Region {
  explicit Region(size_t pages) : size(pages * kPage) {
    base = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    // One huge page would make every page of it present at once.
    if (base != MAP_FAILED) madvise(base, size, MADV_NOHUGEPAGE);
  }
  ~Region() {
    if (base != MAP_FAILED) munmap(base, size);
  }
  unsigned long at(size_t page) const { return reinterpret_cast<unsigned long>(base) + page * kPage; }
  size_t size;
  char* base;
};

std::string describe(const std::vector<PageRun>& runs, unsigned long base) {
  std::string s;
  for (const PageRun& r : runs)
    s += "[" + std::to_string((r.start - base) / kPage) + "," + std::to_string((r.end - base) / kPage) + ") ";
  return s;
}

TEST(ShedMappedRuns, AreThePagesTouchedInAddressOrder) {
  Region r(64);
  ASSERT_NE(r.base, MAP_FAILED);
  for (size_t page : {3, 4, 5, 10, 63}) r.base[page * kPage] = 1;
  EXPECT_EQ(describe(mapped_runs(r.at(0), r.at(64)), r.at(0)), "[3,6) [10,11) [63,64) ");
  // A part of the mapping: the runs it holds, cut at its ends.
  EXPECT_EQ(describe(mapped_runs(r.at(4), r.at(11)), r.at(0)), "[4,6) [10,11) ");
}

TEST(ShedMappedRuns, NoneInPagesNeverTouched) {
  Region r(16);
  ASSERT_NE(r.base, MAP_FAILED);
  EXPECT_TRUE(mapped_runs(r.at(0), r.at(16)).empty());
}

// Which of `pages` pages at `base`, a file's mapping, the page cache holds.
std::vector<bool> in_page_cache(void* base, size_t pages) {
  std::vector<unsigned char> v(pages);
  if (mincore(base, pages * kPage, v.data()) != 0) return {};
  std::vector<bool> out;
  for (unsigned char c : v) out.push_back(c & 1);
  return out;
}

TEST(ShedReadAhead, BringsAFilesPagesBackIntoThePageCacheUnmapped) {
  // On a disk-backed file system (the build tree, where ctest runs): tmpfs
  // pages cannot leave the page cache, so the test would prove nothing.
  std::string path = (std::filesystem::current_path() / "shed_test.XXXXXX").string();
  const int fd = mkstemp(path.data());
  ASSERT_GE(fd, 0) << path;
  unlink(path.c_str());
  constexpr size_t kPages = 256;
  const std::vector<char> bytes(kPages * kPage, 'x');
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  void* base = mmap(nullptr, kPages * kPage, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(base, MAP_FAILED);
  const unsigned long at = reinterpret_cast<unsigned long>(base);
  const std::vector<bool> before = in_page_cache(base, kPages);
  ASSERT_EQ(before.size(), kPages);
  ASSERT_EQ(std::count(before.begin(), before.end(), true), 0)
      << "the file's pages stayed in the page cache: " << std::filesystem::current_path()
      << " must be on a disk-backed file system";

  // Two runs: one within a single read, one over several 128 KiB pieces.
  read_ahead({{at + 8 * kPage, at + 12 * kPage}, {at + 64 * kPage, at + 192 * kPage}});
  // The reads go on after it returns; mincore() counts a page once read.
  const auto all_read = [](const std::vector<bool>& v) {
    return v.size() == kPages && std::all_of(v.begin() + 8, v.begin() + 12, [](bool b) { return b; }) &&
           std::all_of(v.begin() + 64, v.begin() + 192, [](bool b) { return b; });
  };
  std::vector<bool> after = in_page_cache(base, kPages);
  for (int i = 0; i < 500 && !all_read(after); ++i) {
    usleep(10 * 1000);
    after = in_page_cache(base, kPages);
  }
  ASSERT_EQ(after.size(), kPages);
  for (size_t p = 8; p < 12; ++p) EXPECT_TRUE(after[p]) << "page " << p;
  for (size_t p = 64; p < 192; ++p) EXPECT_TRUE(after[p]) << "page " << p;
  // Read, not mapped: the process's resident size does not grow by them.
  EXPECT_TRUE(mapped_runs(at, at + kPages * kPage).empty());
  munmap(base, kPages * kPage);
  close(fd);
}

}  // namespace
}  // namespace histd::cc_server
