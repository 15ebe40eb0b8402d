// SPDX-License-Identifier: GPL-2.0-only
// The files a compile reads (the headers histd's units include, clang's own,
// what the driver looks at to find its tool chain), kept in histd-cc's memory
// for the next compile. Some machines page out any page cache nobody touched
// for a minute, with plenty of memory free: a compile after an idle while
// then waited for each of a dozen files to be read from disk again (a
// trigger 300 s idle took 39 ms where it took 18). Kept here, they stay as
// resident as the rest of histd-cc's heap, and cost it well under a MiB.
#pragma once

#include <llvm/ADT/IntrusiveRefCntPtr.h>
#include <llvm/Support/VirtualFileSystem.h>

namespace histd::cc_server {

// The real file system, but a file opened for reading whose size, time and
// inode are those it had when last read comes from memory. Files under
// /proc (the precompiled prelude is /proc/self/fd/N) and files over 4 MiB
// are always read.
llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> caching_file_system();

}  // namespace histd::cc_server
