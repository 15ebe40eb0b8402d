// SPDX-License-Identifier: GPL-2.0-only
// trace_pipe_raw for splice(2). The kernel's FUSE splices from a direct_io
// file through its inode's page cache (fuse_splice_read is
// filemap_splice_read), which for a file of size 0 holds nothing: a splice
// never reaches histd, and gives 0 bytes. trace-cmd record splices each
// CPU's trace_pipe_raw into its file after a select() says it is readable,
// and reads it only once it stops, so it kept no more than a CPU's buffer.
//
// So a poll() of trace_pipe_raw that finds full pages (those no more events
// go to, what the kernel's splice takes) stores them in the page cache at
// the reader's position (fuse_lowlevel_notify_store, which makes the size
// reach past them) and says readable: the splice that follows takes them
// there. The reader's position is what the file's stores added up to, as a
// reader that splices all a poll offered (libtracefs splices up to a pipe's
// 64 KiB, the most a poll stores) has taken everything before; reads tell
// it (a FUSE read carries the position), so that a reader that polls and
// then read()s gets the pages the poll stored from their copy, and stores
// end. Only the first open file of an inode stores (the page cache and the
// size are the inode's). Its release drops the page cache and the
// attributes it left: the next open's permission check
// (default_permissions) asks the size again, and its 0 lets no splice from
// the start read past what that file's polls store (into page-cache reads
// of histd, which would end its stores).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "fs/fuse_ll.h"
#include "fs/trace_pipe.h"
#include "histd/trace_ring.h"

namespace histd::fs {

class RawSplice {
 public:
  // The most one poll stores: the 64 KiB of a pipe, which libtracefs
  // splices at once.
  static constexpr size_t kStorePages = 16;

  // For an open file of inode `ino` of session `se`; `may_store`: the
  // inode's only open file.
  RawSplice(struct fuse_session* se, fuse_ino_t ino, bool may_store);
  RawSplice(const RawSplice&) = delete;
  RawSplice& operator=(const RawSplice&) = delete;

  // poll() of CPU `cpu` of `ring`: POLLIN when the reader has pages to
  // take (stored for it now, left in `rest` by a short read, or a full page
  // for a reader that reads), 0 while it has none.
  unsigned poll(deploy::TraceRing& ring, uint32_t cpu, const Leftover& rest);
  // A read at `offset`: the reader reads from now on; what polls stored
  // past its position goes to `rest`, which its read takes first.
  void read_at(off_t offset, Leftover& rest);
  // The file is closed: the page cache lets go of what it was given, and
  // the inode's size is asked again.
  void release();

 private:
  // Stores `pages` at end_ and keeps their copy; on failure stores end and
  // the copy waits for a read.
  void store(std::string pages);

  struct fuse_session* const se_;
  const fuse_ino_t ino_;
  std::mutex mu_;
  bool may_store_;
  bool reading_ = false;   // a read came: pages go by read from now on
  uint64_t end_ = 0;       // where the next store goes
  std::string kept_;       // the newest stored bytes, up to end_
  uint64_t released_ = 0;  // the page cache below this was let go of
};

}  // namespace histd::fs
