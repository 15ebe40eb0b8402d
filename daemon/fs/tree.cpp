// SPDX-License-Identifier: GPL-2.0-only
#include "fs/tree.h"

#include <signal.h>

#include <fmt/format.h>

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fs/context.h"
#include "histd/mountinfo.h"

namespace histd::fs {

namespace {

// The id of the newest histd FUSE mount at `mountpoint` (-1: none); with
// `id` >= 0, `id` if that mount is still there.
int find_mount_id(const std::filesystem::path& mountpoint, int id = -1) {
  int found = -1;
  for (const MountEntry& m : mounts_at(mountpoint))
    if (m.fstype == "fuse.histd" && (id < 0 || m.id == id)) found = m.id;
  return found;
}

// How often the watcher checks pollers: hist files' tables, and
// trace_pipe_raw's buffers (as often as a trace_pipe's parked readers).
constexpr std::chrono::milliseconds kPollerCheck{50};
constexpr std::chrono::milliseconds kRawPollerCheck{20};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A thread of the tree's own, which leaves SIGTERM and the like to the FUSE
// loop's thread, as libfuse's workers do.
template <typename F>
std::thread start_thread(F f) {
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  std::thread t(std::move(f));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

const fuse_lowlevel_ops& operations() {
  static const fuse_lowlevel_ops ops = [] {
    fuse_lowlevel_ops o{};
    add_entry_ops(o);
    add_file_ops(o);
    add_refusal_ops(o);
    add_instance_ops(o);
    return o;
  }();
  return ops;
}

// Wakes the trace_pipe_raw pollers whose CPU has a full page now (or
// whose instance is gone). The buffers are asked without the waiters' lock
// (an instance's engine is looked up); a file released meanwhile has
// taken its handle out.
void wake_raw(Tree::Context& ctx) {
  std::vector<std::pair<const OpenFile*, RawWaiter>> waiting;
  {
    std::lock_guard lock(ctx.waiters_mu);
    waiting.assign(ctx.raw_waiters.begin(), ctx.raw_waiters.end());
  }
  std::vector<struct fuse_pollhandle*> ready;
  for (const auto& [file, w] : waiting) {
    const auto engine = ctx.ns.engine(w.instance);
    if (engine && !engine->trace_ring().raw_has_full_page(w.cpu)) continue;
    std::lock_guard lock(ctx.waiters_mu);
    auto it = ctx.raw_waiters.find(file);
    if (it == ctx.raw_waiters.end() || it->second.handle != w.handle) continue;
    ready.push_back(w.handle);
    ctx.raw_waiters.erase(it);
  }
  for (struct fuse_pollhandle* ph : ready) {
    fuse_lowlevel_notify_poll(ph);
    fuse_pollhandle_destroy(ph);
  }
}

}  // namespace

Expected<std::unique_ptr<Tree>> Tree::mount(engine::Engine& engine, const std::filesystem::path& mountpoint,
                                            gid_t group, instances::Instances* instances) {
  std::unique_ptr<Tree> tree(new Tree());
  tree->ctx_ = std::make_unique<Context>(engine, instances, group, kReaderMemory);
  // The kernel enforces the modes the tree reports (default_permissions);
  // allow_other lets the group in.
  std::vector<std::string> argv_s = {"histd", "-o", "fsname=histd,subtype=histd,allow_other,default_permissions"};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  struct fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  tree->session_ = fuse_session_new(&args, &operations(), sizeof(fuse_lowlevel_ops), tree->ctx_.get());
  if (!tree->session_) return fail(ErrorKind::System, EIO, "fuse_session_new failed");
  tree->ctx_->session = tree->session_;
  if (fuse_session_mount(tree->session_, mountpoint.c_str()) != 0)
    return fail(ErrorKind::System, EIO, "cannot mount FUSE at " + mountpoint.string());
  tree->mounted_ = true;
  tree->mountpoint_ = mountpoint;
  tree->mount_id_ = find_mount_id(mountpoint);
  return tree;
}

// BPF updates are invisible to user space until read: pollers are woken by
// checking their events' versions a few times a second, trace_pipe_raw's
// by checking their CPU's buffer (more often: a recorder's buffer may be
// small). With no poller and no trim due, the watcher sleeps until one
// comes: an idle histd wakes for nothing.
void Tree::watch_pollers() {
  while (!stop_watch_) {
    std::vector<Waiter> waiters;
    {
      std::unique_lock lock(ctx_->waiters_mu);
      ctx_->watch_cv.wait(lock, [this] {
        return stop_watch_ || !ctx_->waiters.empty() || !ctx_->raw_waiters.empty() || ctx_->trim_at != 0;
      });
      if (stop_watch_) break;
      waiters.swap(ctx_->waiters);
    }
    wake_raw(*ctx_);
    std::vector<Waiter> still;
    for (Waiter& w : waiters) {
      // A removed instance's pollers are woken too (their reads then fail).
      const auto engine = ctx_->ns.engine(w.instance);
      if (!engine || engine->reads().version(w.system, w.event) != w.version) {
        fuse_lowlevel_notify_poll(w.handle);
        fuse_pollhandle_destroy(w.handle);
      } else {
        still.push_back(std::move(w));
      }
    }
    {
      std::lock_guard lock(ctx_->waiters_mu);
      ctx_->waiters.insert(ctx_->waiters.end(), std::make_move_iterator(still.begin()),
                           std::make_move_iterator(still.end()));
    }
    int64_t trim_at = ctx_->trim_at;
    if (trim_at != 0 && steady_ns() >= trim_at && ctx_->trim_at.compare_exchange_strong(trim_at, 0)) malloc_trim(0);
    bool raw_waiting = false;
    {
      std::lock_guard lock(ctx_->waiters_mu);
      raw_waiting = !ctx_->raw_waiters.empty();
    }
    std::this_thread::sleep_for(raw_waiting ? kRawPollerCheck : kPollerCheck);
  }
}

int Tree::run() {
  stop_watch_ = false;
  ctx_->start_pipes();
  std::thread watcher = start_thread([this] { watch_pollers(); });
  int rc = -1;
  if (fuse_set_signal_handlers(session_) == 0) {
    struct fuse_loop_config* cfg = fuse_loop_cfg_create();
    // No request waits in a worker (trace_pipe reads are parked), so a few
    // serve any number of readers; more only render big tables in parallel.
    fuse_loop_cfg_set_max_threads(cfg, 8);
    rc = fuse_session_loop_mt(session_, cfg);
    fuse_loop_cfg_destroy(cfg);
    fuse_remove_signal_handlers(session_);
  }
  // Readers still waiting on trace_pipe get end of file, before the tree
  // is unmounted (which would fail them with ENOTCONN).
  ctx_->stop_pipes();
  {
    std::lock_guard lock(ctx_->waiters_mu);
    stop_watch_ = true;
    ctx_->watch_cv.notify_one();
  }
  watcher.join();
  std::lock_guard lock(ctx_->waiters_mu);
  for (Waiter& w : ctx_->waiters) fuse_pollhandle_destroy(w.handle);
  ctx_->waiters.clear();
  for (auto& [file, w] : ctx_->raw_waiters) fuse_pollhandle_destroy(w.handle);
  ctx_->raw_waiters.clear();
  return rc;
}

bool Tree::still_mounted() const {
  if (mount_id_ < 0) return true;  // not found at mount: cannot tell, assume so
  // The id and the place: an id freed by the unmount is soon another mount's.
  return find_mount_id(mountpoint_, mount_id_) == mount_id_;
}

Tree::~Tree() {
  if (session_) {
    if (mounted_) fuse_session_unmount(session_);
    fuse_session_destroy(session_);
  }
}

}  // namespace histd::fs
