// SPDX-License-Identifier: GPL-2.0-only
// What histd-cc gives back while it waits idle: it stays running (a compile
// after idle must not pay the libraries' load and relocation again), but
// its resident memory goes back to what the kernel can take at no cost.
#pragma once

#include <cstddef>
#include <vector>

namespace histd::cc_server {

// Pages [start, end) of this process's address space.
struct PageRun {
  unsigned long start = 0;
  unsigned long end = 0;
};

struct Shed {
  size_t mappings = 0;  // file mappings whose resident pages were dropped
  size_t bytes = 0;     // their resident size before
  // The pages those mappings held, in address order: what the compiles
  // before touched, so what the next one will most likely touch again.
  std::vector<PageRun> dropped;
};

// Frees the allocator's unused pages and drops the resident pages of every
// file mapping that holds no private copy (Anonymous: 0 in smaps): code and
// read-only data of libLLVM, libclang-cpp and the rest, recording which
// pages they were (Shed::dropped). Those pages stay in the page cache for
// a while, so touching them again is a minor fault, not a read; a mapping
// with private copies (relocated data) is never touched, since dropping
// those would bring back the file's unrelocated bytes. Call only while no
// other thread runs in this process.
Shed shed_memory();

// The runs of pages of [start, end) that are mapped in this process now
// (the present bit of /proc/self/pagemap); none when it cannot be read.
std::vector<PageRun> mapped_runs(unsigned long start, unsigned long end);

// Asks the kernel to read `runs` of file mappings into the page cache ahead
// of need, and returns without waiting for the reads. Unmapped, the pages
// a shed dropped are the first the kernel takes back from the page cache
// (some machines let them go within minutes, with no memory pressure); the
// compile that needs them next would then wait for each read in turn.
void read_ahead(const std::vector<PageRun>& runs);

}  // namespace histd::cc_server
