// SPDX-License-Identifier: GPL-2.0-only
// The tree's files: open (the content made then), read, write (to the
// engine), release, poll. Every one answers at once but a trace_pipe read
// that finds no lines, which TracePipe parks.
#include <fcntl.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "fs/context.h"
#include "histd/symbols.h"

namespace histd::fs {

namespace {

// Big contents (a large table's hist) count as a read whose heap is kept
// for a few seconds.
constexpr size_t kBigContent = 1 << 20;
constexpr std::chrono::seconds kKeepHeapAfterRead{5};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Tree::Context::trim_soon() {
  std::lock_guard lock(waiters_mu);
  trim_at = steady_ns() + std::chrono::nanoseconds(kKeepHeapAfterRead).count();
  watch_cv.notify_one();
}

namespace {

// How the task making the request is shown kernel addresses: as the kernel
// decides for kallsyms (root always; others by kptr_restrict).
render::Options reader_options(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return render::Options{!symbols::may_see_kernel_addresses(c->uid, c->pid)};
}

// Fills `file` for a reader of `n`; a negative errno on failure.
int open_content(Tree::Context& ctx, const Node& n, OpenFile& file) {
  if (n.row->opening == Opening::Hist) {
    auto r = ctx.renderings.open(n, file.options);
    if (!r) return -r.error().err;
    file.content = std::move(r->text);
    file.version = r->version;
    return 0;
  }
  std::string text;
  if (const int rc = ctx.ns.generate(n, file.options, text); rc < 0) return rc;
  file.content = std::make_shared<const std::string>(std::move(text));
  return 0;
}

void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  if (n.kind != Node::Kind::File) {
    fuse_reply_err(req, n.kind == Node::Kind::None ? ENOENT : EISDIR);
    return;
  }
  const int mode = fi->flags & O_ACCMODE;
  if (mode != O_RDONLY && !writable(n)) {
    fuse_reply_err(req, EACCES);
    return;
  }
  // A trigger (or event definition) is about to be written: a resident
  // compiler stopped for idleness loads its libraries meanwhile.
  if (mode != O_RDONLY && n.row->warms_compiler)
    if (const auto engine = ctx.ns.engine(n.instance)) engine->warm_compiler();
  // Contents change under us: never cached; sizes read as 0, as in tracefs.
  fi->direct_io = 1;
  fi->nonseekable = 0;
  if (mode != O_RDONLY && (fi->flags & O_TRUNC)) {
    if (const int rc = truncate_file(ctx, n, fuse_req_ctx(req)->uid); rc < 0) {
      fuse_reply_err(req, -rc);
      return;
    }
  }
  auto file = std::make_unique<OpenFile>();
  file->options = reader_options(req);
  file->instance = n.instance;
  if (n.row->opening == Opening::Pipe || n.row->opening == Opening::RawPipe) {
    // Read as it is consumed, never at open.
    file->pipe = true;
    file->cpu = n.cpu;
    file->raw = n.row->opening == Opening::RawPipe;
    // Not a stream: a read's offset is the reader's position (RawSplice).
    fi->nonseekable = 1;
    if (file->raw) file->splice = std::make_unique<RawSplice>(ctx.session, ino, ctx.raw_opened(ino));
  } else if (mode != O_WRONLY) {
    if (const int rc = open_content(ctx, n, *file); rc < 0) {
      fuse_reply_err(req, -rc);
      return;
    }
  }
  if (!ctx.opened(n.instance)) {
    if (file->splice) ctx.raw_released(ino);
    fuse_reply_err(req, ENOENT);  // its instance was removed meanwhile
    return;
  }
  fi->fh = reinterpret_cast<uint64_t>(file.get());
  if (fuse_reply_open(req, fi) == 0) {
    file.release();  // else the kernel never got it: freed here
    return;
  }
  if (file->splice) ctx.raw_released(ino);
  ctx.released(n.instance);
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, struct fuse_file_info* fi) {
  auto* file = reinterpret_cast<OpenFile*>(fi->fh);
  if (!file || off < 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  if (file->pipe) {
    // Blocks until lines arrive, as trace_pipe does, without holding this
    // worker; a signal to the reader ends the read (TracePipe).
    TracePipe* pipe = context_of(req).pipe_of(*file);
    if (file->splice) file->splice->read_at(off, file->rest);
    // O_NONBLOCK as the reader has it now (FUSE sends the file's flags
    // with each read): libtracefs sets it with fcntl() to drain the buffer
    // when a recording stops.
    if (pipe)
      pipe->read(req, size, (fi->flags & O_NONBLOCK) != 0, file->options, file->raw ? &file->rest : nullptr);
    else
      fuse_reply_buf(req, nullptr, 0);
    return;
  }
  // Held until the reply is out: the reader may close the file once the
  // kernel has the reply, and its release may run on another worker while
  // this one is still returning from writev.
  const Text text = file->content;
  const std::string empty;
  const std::string& content = text ? *text : empty;
  const size_t offset = static_cast<size_t>(off);
  if (offset >= content.size()) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  fuse_reply_buf(req, content.data() + offset, std::min(size, content.size() - offset));
}

// A write to `n`: the bytes taken, or a negative errno.
int write_file(Tree::Context& ctx, const Node& n, std::string_view data, const fuse_ctx& caller) {
  const std::shared_ptr<engine::Engine> engine = ctx.ns.engine(n);
  if (!engine) return -ENOENT;
  return n.row->write(FileCall{ctx.ns, *engine, n, {}, caller.uid, caller.pid, &ctx.host_pids}, data);
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t, struct fuse_file_info*) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  if (n.kind != Node::Kind::File || !writable(n)) {
    fuse_reply_err(req, EACCES);
    return;
  }
  const int rc = write_file(ctx, n, std::string_view(buf, size), *fuse_req_ctx(req));
  if (rc < 0)
    fuse_reply_err(req, -rc);
  else
    fuse_reply_write(req, static_cast<size_t>(rc));
}

void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  auto* file = reinterpret_cast<OpenFile*>(fi->fh);
  if (file && file->splice) release_raw(context_of(req), ino, *file);
  if (file && file->content && file->content->size() >= kBigContent) context_of(req).trim_soon();
  if (file) context_of(req).released(file->instance);
  delete file;
  fi->fh = 0;
  fuse_reply_err(req, 0);
}

void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi, struct fuse_pollhandle* ph) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  auto* file = reinterpret_cast<OpenFile*>(fi->fh);
  if (file && file->splice) {
    poll_raw(req, ctx, *file, ph);
    return;
  }
  if (!n.row || !n.row->polls_tables || !file) {
    // Everything else is always readable, as a seq_file is.
    if (ph) fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLRDNORM);
    return;
  }
  const auto engine = ctx.ns.engine(n);
  if (!engine || engine->reads().version(n.system, n.event) != file->version) {
    if (ph) fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLPRI);
    return;
  }
  if (ph) {
    std::lock_guard lock(ctx.waiters_mu);
    ctx.waiters.push_back(Waiter{n.instance, n.system, n.event, file->version, ph});
    ctx.watch_cv.notify_one();
  }
  fuse_reply_poll(req, 0);
}

}  // namespace

int truncate_file(Tree::Context& ctx, const Node& n, uid_t uid) {
  const std::shared_ptr<engine::Engine> engine = ctx.ns.engine(n);
  if (!engine) return -ENOENT;
  // trace_marker, enable, snapshot, tracing_on, ...: nothing to drop.
  if (!n.row || !n.row->truncate) return 0;
  return n.row->truncate(FileCall{ctx.ns, *engine, n, {}, uid});
}

void add_file_ops(fuse_lowlevel_ops& ops) {
  ops.open = op_open;
  ops.read = op_read;
  ops.write = op_write;
  ops.release = op_release;
  ops.poll = op_poll;
}

}  // namespace histd::fs
