// SPDX-License-Identifier: GPL-2.0-only
// trace_pipe_raw's poll and release, and which of its open files store
// pages for splice (RawSplice, fs/raw_splice.h).
#include <poll.h>

#include "fs/context.h"

namespace histd::fs {

void poll_raw(fuse_req_t req, Tree::Context& ctx, OpenFile& file, struct fuse_pollhandle* ph) {
  const auto engine = ctx.ns.engine(file.instance);
  const unsigned events = engine ? file.splice->poll(engine->trace_ring(), static_cast<uint32_t>(file.cpu), file.rest)
                                 : POLLIN | POLLRDNORM;  // its instance is gone: a read tells
  if (events != 0 || !ph) {
    if (ph) fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, events);
    return;
  }
  struct fuse_pollhandle* old = nullptr;
  {
    std::lock_guard lock(ctx.waiters_mu);
    RawWaiter& w = ctx.raw_waiters[&file];
    old = w.handle;
    w = RawWaiter{file.instance, static_cast<uint32_t>(file.cpu), ph};
    ctx.watch_cv.notify_one();
  }
  if (old) fuse_pollhandle_destroy(old);
  fuse_reply_poll(req, 0);
}

void release_raw(Tree::Context& ctx, fuse_ino_t ino, OpenFile& file) {
  struct fuse_pollhandle* handle = nullptr;
  {
    std::lock_guard lock(ctx.waiters_mu);
    auto it = ctx.raw_waiters.find(&file);
    if (it != ctx.raw_waiters.end()) {
      handle = it->second.handle;
      ctx.raw_waiters.erase(it);
    }
  }
  if (handle) fuse_pollhandle_destroy(handle);
  file.splice->release();
  ctx.raw_released(ino);
}

bool Tree::Context::raw_opened(fuse_ino_t ino) {
  std::lock_guard lock(raw_mu);
  return ++raw_opens[ino] == 1;
}

void Tree::Context::raw_released(fuse_ino_t ino) {
  std::lock_guard lock(raw_mu);
  auto it = raw_opens.find(ino);
  if (it != raw_opens.end() && --it->second == 0) raw_opens.erase(it);
}

}  // namespace histd::fs
