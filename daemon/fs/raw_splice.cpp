// SPDX-License-Identifier: GPL-2.0-only
#include "fs/raw_splice.h"

#include <poll.h>

#include <vector>

namespace histd::fs {

namespace {

// The stored bytes a file keeps a copy of: two polls' worth, for a reader
// that polls twice before it reads.
constexpr size_t kKeep = 2 * RawSplice::kStorePages * trace::kRawPageSize;
// What the page cache is told to let go of at once: what readers took
// stays cached until then (clean pages, which the kernel may reclaim).
constexpr uint64_t kReleaseEvery = uint64_t{1} << 20;

}  // namespace

RawSplice::RawSplice(struct fuse_session* se, fuse_ino_t ino, bool may_store)
    : se_(se), ino_(ino), may_store_(may_store && se != nullptr) {}

unsigned RawSplice::poll(deploy::TraceRing& ring, uint32_t cpu, const Leftover& rest) {
  std::lock_guard lock(mu_);
  if (!rest.empty()) return POLLIN | POLLRDNORM;
  // A store that failed: its pages wait for a read.
  if (!reading_ && !may_store_ && !kept_.empty()) return POLLIN | POLLRDNORM;
  if (reading_ || !may_store_) return ring.raw_has_full_page(cpu) ? POLLIN | POLLRDNORM : 0;
  std::string pages;
  for (size_t i = 0; i < kStorePages; ++i) {
    auto page = ring.take_full_raw_page(cpu);
    if (!page) break;
    pages += *page;
  }
  if (pages.empty()) return 0;
  store(std::move(pages));
  return POLLIN | POLLRDNORM;
}

void RawSplice::store(std::string pages) {
  // What readers took long ago stays in the page cache until let go of.
  const uint64_t kept_from = end_ - kept_.size();
  if (kept_from >= released_ + kReleaseEvery) {
    fuse_lowlevel_notify_inval_inode(se_, ino_, static_cast<off_t>(released_),
                                     static_cast<off_t>(kept_from - released_));
    released_ = kept_from;
  }
  struct fuse_bufvec buf = FUSE_BUFVEC_INIT(pages.size());
  buf.buf[0].mem = pages.data();
  const int rc =
      fuse_lowlevel_notify_store(se_, ino_, static_cast<off_t>(end_), &buf, static_cast<fuse_buf_copy_flags>(0));
  end_ += pages.size();
  kept_ += pages;
  if (kept_.size() > kKeep) kept_.erase(0, kept_.size() - kKeep);
  if (rc != 0) may_store_ = false;
}

void RawSplice::read_at(off_t offset, Leftover& rest) {
  std::lock_guard lock(mu_);
  if (reading_) return;
  reading_ = true;
  const uint64_t from = end_ - kept_.size();
  const auto at = static_cast<uint64_t>(offset);
  if (at >= from && at < end_) rest.keep(kept_.substr(at - from));
  kept_.clear();
}

void RawSplice::release() {
  std::lock_guard lock(mu_);
  if (end_ > 0) fuse_lowlevel_notify_inval_inode(se_, ino_, 0, 0);
}

}  // namespace histd::fs
