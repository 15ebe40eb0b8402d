// SPDX-License-Identifier: GPL-2.0-only
// The tree's files: open (the content made then), read, write (to the
// engine), release, poll. Every one answers at once but a trace_pipe read
// that finds no lines, which TracePipe parks.
#include <fcntl.h>
#include <poll.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "fs/context.h"
#include "fs/control_value.h"
#include "fs/dynamic_events.h"
#include "fs/enable_files.h"
#include "histd/symbols.h"
#include "histd/text.h"

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

// How the task making the request is shown kernel addresses: as the kernel
// decides for kallsyms (root always; others by kptr_restrict).
render::Options reader_options(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return render::Options{!symbols::may_see_kernel_addresses(c->uid, c->pid)};
}

// The comm of the task writing to trace_marker.
std::string comm_of(pid_t pid) {
  std::string comm;
  if (FILE* f = std::fopen(fmt::format("/proc/{}/comm", pid).c_str(), "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f)) comm = buf;
    std::fclose(f);
  }
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// Fills `file` for a reader of `n`; a negative errno on failure.
int open_content(Tree::Context& ctx, const Node& n, OpenFile& file) {
  if (n.file == "hist" || n.file == "hist.json") {
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
  if (mode != O_RDONLY && (n.file == "trigger" || n.file == "synthetic_events" || n.file == "dynamic_events"))
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
  if (n.file == "trace_pipe") {
    // Read as it is consumed, never at open.
    file->pipe = true;
    file->nonblock = (fi->flags & O_NONBLOCK) != 0;
    fi->nonseekable = 1;
  } else if (mode != O_WRONLY) {
    if (const int rc = open_content(ctx, n, *file); rc < 0) {
      fuse_reply_err(req, -rc);
      return;
    }
  }
  if (!ctx.opened(n.instance)) {
    fuse_reply_err(req, ENOENT);  // its instance was removed meanwhile
    return;
  }
  fi->fh = reinterpret_cast<uint64_t>(file.get());
  if (fuse_reply_open(req, fi) == 0) file.release();  // else the kernel never got it: freed here
  else ctx.released(n.instance);
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, struct fuse_file_info* fi) {
  const auto* file = reinterpret_cast<const OpenFile*>(fi->fh);
  if (!file || off < 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  if (file->pipe) {
    // Blocks until lines arrive, as trace_pipe does, without holding this
    // worker; a signal to the reader ends the read (TracePipe).
    TracePipe* pipe = context_of(req).pipe_of(file->instance);
    if (pipe) pipe->read(req, size, file->nonblock, file->options);
    else fuse_reply_buf(req, nullptr, 0);
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
  const pid_t pid = caller.pid;
  const std::shared_ptr<engine::Engine> held = ctx.ns.engine(n);
  if (!held) return -ENOENT;
  engine::Engine& engine = *held;
  const int size = static_cast<int>(data.size());
  if (n.file == "error_log" || n.file == "trace") {
    // As tracefs: what is written is ignored; opening with O_TRUNC clears
    // (truncate_file), so `echo junk >> error_log` keeps the log.
    return size;
  }
  if (n.file == "snapshot") {
    // As tracefs: 0 frees it, 1 takes a snapshot, any other number clears it.
    auto v = parse_control_number(data);
    if (!v) return -v.error();
    engine.write_snapshot(*v);
    return size;
  }
  if (n.file == "tracing_on") {
    // As rb_simple_write(): any number, non-zero for on.
    auto v = parse_control_number(data);
    if (!v) return -v.error();
    engine.set_tracing_on(*v != 0);
    return size;
  }
  if (n.file == "current_tracer") {
    // As tracing_set_trace_write(): the name without surrounding blanks;
    // a tracer histd does not have is EINVAL.
    return trim(data) == "nop" ? size : -EINVAL;
  }
  if (n.file == "enable") {
    auto v = parse_enable(data);
    if (!v) return -v.error();
    const int rc = write_enable(ctx.ns, n, *v);
    return rc < 0 ? rc : size;
  }
  if (n.file == "set_event") {
    const int rc = write_set_event(ctx.ns, n, data);
    return rc < 0 ? rc : size;
  }
  if (n.file == "options/stacktrace") {
    auto v = parse_enable(data);
    if (!v) return -v.error();
    engine.set_stacktrace_option(*v);
    return size;
  }
  if (n.file == "trace_marker") {
    auto r = engine.write_marker(data, ctx.host_pids.host_pid(pid), comm_of(pid));
    return r ? size : -r.error().error.err;
  }
  if (n.file == "synthetic_events") {
    auto r = engine.write_synthetic(data);
    return r ? size : -r.error().error.err;
  }
  if (n.file == "dynamic_events") {
    const int rc = write_dynamic_events(engine, data, caller.uid == 0);
    return rc < 0 ? rc : size;
  }
  if (n.file == "kprobe_events" || n.file == "uprobe_events") {
    auto r = engine.write_probe_events(n.file, data, false);
    return r ? size : -r.error().error.err;
  }
  // As tracefs: one write(2) is one command, and a page is the most it takes.
  if (data.size() >= 4096) return -EINVAL;
  auto r = engine.write_trigger(n.system, n.event, data, symbols::may_see_kernel_addresses(caller.uid, caller.pid));
  if (!r) {
    // The writer gets an errno and error_log one line: the whole story (a
    // verifier log, the compiler's output) goes to histd's log.
    if (!r.error().diagnostic) fmt::print(stderr, "histd: {}:{}: {}\n", n.system, n.event, r.error().message());
    return -r.error().error.err;
  }
  return size;
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t, struct fuse_file_info*) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  if (n.kind != Node::Kind::File || !writable(n)) {
    fuse_reply_err(req, EACCES);
    return;
  }
  const int rc = write_file(ctx, n, std::string_view(buf, size), *fuse_req_ctx(req));
  if (rc < 0) fuse_reply_err(req, -rc);
  else fuse_reply_write(req, static_cast<size_t>(rc));
}

void op_release(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  auto* file = reinterpret_cast<OpenFile*>(fi->fh);
  if (file && file->content && file->content->size() >= kBigContent) {
    Tree::Context& ctx = context_of(req);
    std::lock_guard lock(ctx.waiters_mu);
    ctx.trim_at = steady_ns() + std::chrono::nanoseconds(kKeepHeapAfterRead).count();
    ctx.watch_cv.notify_one();
  }
  if (file) context_of(req).released(file->instance);
  delete file;
  fi->fh = 0;
  fuse_reply_err(req, 0);
}

void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi, struct fuse_pollhandle* ph) {
  Tree::Context& ctx = context_of(req);
  const Node n = ctx.node_of(ino);
  const auto* file = reinterpret_cast<const OpenFile*>(fi->fh);
  if (n.file != "hist" || !file) {
    // Everything else is always readable, as a seq_file is.
    if (ph) fuse_pollhandle_destroy(ph);
    fuse_reply_poll(req, POLLIN | POLLRDNORM);
    return;
  }
  const auto engine = ctx.ns.engine(n);
  if (!engine || engine->version(n.system, n.event) != file->version) {
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
  const std::shared_ptr<engine::Engine> held = ctx.ns.engine(n);
  if (!held) return -ENOENT;
  engine::Engine& engine = *held;
  if (n.file == "error_log") {
    engine.clear_error_log();
    return 0;
  }
  if (n.file == "trace") {
    engine.clear_trace();
    return 0;
  }
  if (n.file == "synthetic_events") {
    auto r = engine.truncate_synthetic();
    return r ? 0 : -r.error().error.err;
  }
  if (n.file == "dynamic_events") return truncate_dynamic_events(engine, uid == 0);
  if (n.file == "set_event") return clear_set_event(ctx.ns, n);
  if (n.file == "kprobe_events" || n.file == "uprobe_events") {
    auto r = engine.write_probe_events(n.file, "", true);
    return r ? 0 : -r.error().error.err;
  }
  if (n.file != "trigger") return 0;  // trace_marker, enable, snapshot, tracing_on, ...: nothing to drop
  auto r = engine.truncate_triggers(n.system, n.event);
  return r ? 0 : -r.error().error.err;
}

void add_file_ops(fuse_lowlevel_ops& ops) {
  ops.open = op_open;
  ops.read = op_read;
  ops.write = op_write;
  ops.release = op_release;
  ops.poll = op_poll;
}

}  // namespace histd::fs
