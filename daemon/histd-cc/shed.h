// What histd-cc gives back while it waits idle: it stays running (a compile
// after idle must not pay the libraries' load and relocation again), but
// its resident memory goes back to what the kernel can take at no cost.
#pragma once

#include <cstddef>

namespace histd::cc_server {

struct Shed {
  size_t mappings = 0;  // file mappings whose resident pages were dropped
  size_t bytes = 0;     // their resident size before
};

// Frees the allocator's unused pages and drops the resident pages of every
// file mapping that holds no private copy (Anonymous: 0 in smaps): code and
// read-only data of libLLVM, libclang-cpp and the rest. Those pages stay in
// the page cache, so touching them again is a minor fault, not a read; a
// mapping with private copies (relocated data) is never touched, since
// dropping those would bring back the file's unrelocated bytes. Call only
// while no other thread runs in this process.
Shed shed_memory();

}  // namespace histd::cc_server
