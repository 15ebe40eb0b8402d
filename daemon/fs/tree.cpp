#define FUSE_USE_VERSION 314
#include "fs/tree.h"

#include "fs/control_value.h"

#include <fcntl.h>
#include <fuse3/fuse.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <malloc.h>
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <set>
#include <string>
#include <vector>

namespace histd::fs {

namespace {

// What a path names.
struct Node {
  enum class Kind { None, Root, EventsDir, SystemDir, EventDir, File };
  Kind kind = Kind::None;
  std::string system;
  std::string event;
  std::string file;  // README, format, trigger, ...
};

constexpr const char* kEventFiles[] = {"format", "hist", "hist.json", "hist_debug", "id", "trigger"};
constexpr const char* kRootFiles[] = {"README",     "available_events", "error_log",   "synthetic_events",
                                     "trace",      "trace_pipe",       "trace_marker", "snapshot"};
constexpr const char* kSynthSystem = "synthetic";

// An open file: its content generated at open time.
struct OpenFile {
  std::string content;
  uint64_t version = 0;  // hist files: the event's version when opened
  bool pipe = false;     // trace_pipe: each read takes lines out of the buffer
  bool nonblock = false;
};

// A poll() waiting for an event's tables to change.
struct Waiter {
  std::string system;
  std::string event;
  uint64_t version = 0;
  struct fuse_pollhandle* handle = nullptr;
};

std::vector<std::string> split_path(const char* path) {
  std::vector<std::string> parts;
  std::string cur;
  for (const char* p = path; *p; ++p) {
    if (*p == '/') {
      if (!cur.empty()) parts.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) parts.push_back(std::move(cur));
  return parts;
}

// Mount points in /proc/self/mountinfo escape space, tab, newline and
// backslash as octal.
std::string mountinfo_escape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\')
      out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

// The id of the newest histd FUSE mount at `mountpoint` (-1: none).
int find_mount_id(const std::filesystem::path& mountpoint) {
  const std::string want = mountinfo_escape(mountpoint.string());
  int found = -1;
  FILE* f = std::fopen("/proc/self/mountinfo", "re");
  if (!f) return -1;
  char* line = nullptr;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    // "<id> <parent> <major:minor> <root> <mount point> <options> [tags] - <fstype> ..."
    int id = -1;
    char point[4096];
    if (std::sscanf(line, "%d %*d %*s %*s %4095s", &id, point) != 2) continue;
    const char* sep = std::strstr(line, " - ");
    if (want == point && sep && std::strncmp(sep + 3, "fuse.histd ", 11) == 0) found = id;
  }
  std::free(line);
  std::fclose(f);
  return found;
}

}  // namespace

struct Tree::Context {
  engine::Engine* engine = nullptr;
  gid_t group = 0;  // may change triggers besides root
  std::mutex waiters_mu;
  std::vector<Waiter> waiters;
  // When to hand freed heap back to the kernel (steady-clock ns, 0: nothing
  // to hand back): the allocator keeps what a big read freed, so that the
  // next read does not fault it all in again (see histd's main), until reads
  // have stopped for a while.
  std::atomic<int64_t> trim_at{0};
  std::map<std::string, std::set<std::string>> systems;  // system -> events

  Node resolve(const char* path) const {
    const auto parts = split_path(path);
    Node n;
    if (parts.empty()) {
      n.kind = Node::Kind::Root;
      return n;
    }
    if (parts.size() == 1) {
      if (parts[0] == "events") {
        n.kind = Node::Kind::EventsDir;
        return n;
      }
      for (const char* f : kRootFiles)
        if (parts[0] == f) {
          n.kind = Node::Kind::File;
          n.file = f;
        }
      return n;
    }
    if (parts[0] != "events" || parts.size() > 4) return n;
    if (!has_system(parts[1])) return n;
    n.system = parts[1];
    if (parts.size() == 2) {
      n.kind = Node::Kind::SystemDir;
      return n;
    }
    if (!has_event(parts[1], parts[2])) return n;
    n.event = parts[2];
    if (parts.size() == 3) {
      n.kind = Node::Kind::EventDir;
      return n;
    }
    for (const char* f : kEventFiles)
      if (parts[3] == f) {
        n.kind = Node::Kind::File;
        n.file = f;
      }
    if (parts[3] == "enable" && n.system == kSynthSystem) {
      n.kind = Node::Kind::File;
      n.file = "enable";
    }
    return n;
  }

  // Synthetic events come and go while histd runs: asked of the engine.
  // The kernel's events are those tracefs had at mount, plus any created
  // since (kprobe and uprobe events), found by name in tracefs and served
  // while they exist; an event that still has triggers stays reachable so
  // that they can be read and removed.
  bool has_system(const std::string& system) const {
    if (system == kSynthSystem) return !engine->synthetic_names().empty();
    if (systems.count(system) > 0) return true;
    const auto live = engine->catalog().live_systems();
    return std::find(live.begin(), live.end(), system) != live.end() || !engine_events_of(system).empty();
  }
  bool has_event(const std::string& system, const std::string& event) const {
    if (system == kSynthSystem) return engine->catalog().contains(system, event);
    auto sys = systems.find(system);
    if (sys != systems.end() && sys->second.count(event) > 0) return true;
    return engine->catalog().contains(system, event) || engine_events_of(system).count(event) > 0;
  }
  std::set<std::string> events_of(const std::string& system) const {
    if (system == kSynthSystem) {
      auto names = engine->synthetic_names();
      return std::set<std::string>(names.begin(), names.end());
    }
    auto sys = systems.find(system);
    std::set<std::string> out = sys == systems.end() ? std::set<std::string>() : sys->second;
    for (std::string& ev : engine->catalog().live_events(system)) out.insert(std::move(ev));
    out.merge(engine_events_of(system));
    return out;
  }
  // Events of `system` that have triggers in the engine.
  std::set<std::string> engine_events_of(const std::string& system) const {
    std::set<std::string> out;
    for (const std::string& line : engine->list_triggers()) {
      const size_t colon = line.find(':'), space = line.find(' ');
      if (colon != std::string::npos && space != std::string::npos && colon < space &&
          line.compare(0, colon, system) == 0)
        out.insert(line.substr(colon + 1, space - colon - 1));
    }
    return out;
  }

  std::string readme() const {
    return "histd: the kernel's hist trigger language on eBPF.\n\n"
           "  events/<system>/<event>/trigger  write hist commands here\n"
           "  events/<system>/<event>/hist     the event's histograms\n"
           "  error_log                        rejected commands, with a caret at the fault\n"
           "  synthetic_events                 define synthetic events: name type field[; type field]...\n"
           "  trace, trace_pipe                synthetic events that are enabled, and trace_marker text\n"
           "  trace_marker                     text written here is a ftrace:print event\n\n"
           "hist trigger syntax:\n"
           "  hist:keys=<field1[,field2,...]>[:values=<field1[,field2,...]>]\n"
           "    [:sort=<field1[,field2,...]>][:size=#entries][:pause][:continue]\n"
           "    [:clear][:name=histname1][:nohitcount] [if <filter>]\n";
  }

  std::string available_events() const {
    std::set<std::pair<std::string, std::string>> all;
    for (const auto& [sys, events] : systems)
      for (const auto& ev : events) all.emplace(sys, ev);
    for (const catalog::EventId& id : engine->catalog().discovered_events()) all.emplace(id.system, id.name);
    std::string out;
    for (const auto& [sys, ev] : all) out += sys + ":" + ev + "\n";
    for (const std::string& ev : engine->synthetic_names()) out += std::string(kSynthSystem) + ":" + ev + "\n";
    return out;
  }

  // Content of a readable file, or a negative errno.
  int generate(const Node& n, std::string& out) const {
    if (n.system.empty()) {
      if (n.file == "README") out = readme();
      else if (n.file == "available_events") out = available_events();
      else if (n.file == "error_log") out = engine->read_error_log();
      else if (n.file == "synthetic_events") out = engine->read_synthetic();
      else if (n.file == "trace") out = engine->read_trace();
      else if (n.file == "snapshot") out = engine->read_snapshot();
      return 0;
    }
    if (n.file == "enable") {
      out = engine->enabled(n.system, n.event) ? "1\n" : "0\n";
      return 0;
    }
    if (n.file == "trigger") {
      out = engine->read_trigger(n.system, n.event);
      return 0;
    }
    if (n.file == "hist") {
      auto text = engine->read_hist(n.system, n.event);
      if (!text) return -text.error().err;
      out = std::move(*text);
      return 0;
    }
    if (n.file == "hist.json") {
      auto text = engine->read_hist_json(n.system, n.event);
      if (!text) return -text.error().err;
      out = std::move(*text);
      return 0;
    }
    if (n.file == "hist_debug") {
      out = engine->read_hist_debug(n.system, n.event);
      return 0;
    }
    auto format = engine->catalog().event(n.system, n.event);
    if (!format) return -format.error().err;
    out = n.file == "format" ? (*format)->text : fmt::format("{}\n", (*format)->id);
    return 0;
  }
};

namespace {

Tree::Context& context() { return *static_cast<Tree::Context*>(fuse_get_context()->private_data); }

bool writable(const Node& n) {
  return n.file == "trigger" || n.file == "error_log" || n.file == "synthetic_events" || n.file == "trace" ||
         n.file == "trace_marker" || n.file == "enable" || n.file == "snapshot";
}

// The comm of the task writing to trace_marker.
std::string comm_of(pid_t pid) {
  std::string comm;
  if (FILE* f = std::fopen(fmt::format("/proc/{}/comm", pid).c_str(), "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f)) comm = buf;
    std::fclose(f);
  }
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

int op_getattr(const char* path, struct stat* st, struct fuse_file_info*) {
  std::memset(st, 0, sizeof(*st));
  const Node n = context().resolve(path);
  const Tree::Context& ctx = context();
  st->st_uid = 0;
  st->st_gid = ctx.group;
  switch (n.kind) {
    case Node::Kind::None:
      return -ENOENT;
    case Node::Kind::File:
      // The kernel checks these modes (default_permissions): only root, or
      // the configured group, may write.
      st->st_mode = S_IFREG | (writable(n) ? (ctx.group ? 0664 : 0644) : 0444);
      st->st_nlink = 1;
      return 0;
    default:
      st->st_mode = S_IFDIR | 0755;
      st->st_nlink = 2;
      return 0;
  }
}

int op_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, struct fuse_file_info*,
               enum fuse_readdir_flags) {
  const Tree::Context& ctx = context();
  const Node n = ctx.resolve(path);
  fill(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  auto add = [&](const std::string& name) { fill(buf, name.c_str(), nullptr, 0, static_cast<fuse_fill_dir_flags>(0)); };
  switch (n.kind) {
    case Node::Kind::Root:
      for (const char* f : kRootFiles) add(f);
      add("events");
      return 0;
    case Node::Kind::EventsDir: {
      std::set<std::string> names;
      for (const auto& [sys, events] : ctx.systems) names.insert(sys);
      for (std::string& sys : ctx.engine->catalog().live_systems()) names.insert(std::move(sys));
      if (ctx.has_system(kSynthSystem)) names.insert(kSynthSystem);
      for (const std::string& sys : names) add(sys);
      return 0;
    }
    case Node::Kind::SystemDir:
      for (const auto& ev : ctx.events_of(n.system)) add(ev);
      return 0;
    case Node::Kind::EventDir:
      for (const char* f : kEventFiles) add(f);
      if (n.system == kSynthSystem) add("enable");
      return 0;
    default:
      return -ENOTDIR;
  }
}

// Truncating a writable file (O_TRUNC or truncate(2)), as tracefs does:
// trigger files lose their triggers, the logs and buffers their contents.
int truncate_file(Tree::Context& ctx, const Node& n) {
  if (n.file == "error_log") {
    ctx.engine->clear_error_log();
    return 0;
  }
  if (n.file == "trace") {
    ctx.engine->clear_trace();
    return 0;
  }
  if (n.file == "synthetic_events") {
    auto r = ctx.engine->truncate_synthetic();
    return r ? 0 : -r.error().error.err;
  }
  if (n.file != "trigger") return 0;  // trace_marker, enable, snapshot: nothing to drop
  auto r = ctx.engine->truncate_triggers(n.system, n.event);
  return r ? 0 : -r.error().error.err;
}

int op_open(const char* path, struct fuse_file_info* fi) {
  Tree::Context& ctx = context();
  const Node n = ctx.resolve(path);
  if (n.kind != Node::Kind::File) return -ENOENT;
  const int mode = fi->flags & O_ACCMODE;
  if (mode != O_RDONLY && !writable(n)) return -EACCES;
  fi->direct_io = 1;
  fi->nonseekable = 0;
  if (mode != O_RDONLY && (fi->flags & O_TRUNC)) {
    const int rc = truncate_file(ctx, n);
    if (rc < 0) return rc;
  }
  auto file = std::make_unique<OpenFile>();
  if (n.file == "hist") file->version = ctx.engine->version(n.system, n.event);
  if (n.file == "trace_pipe") {
    // Read as it is consumed, never at open.
    file->pipe = true;
    file->nonblock = (fi->flags & O_NONBLOCK) != 0;
    fi->nonseekable = 1;
    fi->fh = reinterpret_cast<uint64_t>(file.release());
    return 0;
  }
  if (mode != O_WRONLY) {
    int rc = ctx.generate(n, file->content);
    if (rc < 0) return rc;
  }
  fi->fh = reinterpret_cast<uint64_t>(file.release());
  return 0;
}

int op_read(const char*, char* buf, size_t size, off_t off, struct fuse_file_info* fi) {
  const auto* file = reinterpret_cast<const OpenFile*>(fi->fh);
  if (!file || off < 0) return -EINVAL;
  if (file->pipe) {
    // Blocks until lines arrive, as trace_pipe does; a signal interrupts.
    for (;;) {
      auto lines = context().engine->consume_trace(std::chrono::milliseconds(file->nonblock ? 0 : 200), size);
      if (lines) {
        const size_t n = std::min(size, lines->size());
        std::memcpy(buf, lines->data(), n);
        return static_cast<int>(n);
      }
      if (file->nonblock) return -EAGAIN;
      if (fuse_interrupted()) return -EINTR;
    }
  }
  const size_t offset = static_cast<size_t>(off);
  if (offset >= file->content.size()) return 0;
  const size_t n = std::min(size, file->content.size() - offset);
  std::memcpy(buf, file->content.data() + offset, n);
  return static_cast<int>(n);
}

int op_write(const char* path, const char* buf, size_t size, off_t, struct fuse_file_info*) {
  Tree::Context& ctx = context();
  const Node n = ctx.resolve(path);
  if (n.kind != Node::Kind::File || !writable(n)) return -EACCES;
  if (n.file == "error_log" || n.file == "trace") {
    // As tracefs: what is written is ignored; opening with O_TRUNC clears
    // (truncate_file), so `echo junk >> error_log` keeps the log.
    return static_cast<int>(size);
  }
  if (n.file == "snapshot") {
    // As tracefs: 0 frees and any number above 1 clears it (both empty it
    // here); 1 is a manual snapshot histd does not take.
    auto v = parse_control_number(std::string_view(buf, size));
    if (!v) return -v.error();
    if (*v == 1) return -EINVAL;
    ctx.engine->clear_snapshot();
    return static_cast<int>(size);
  }
  if (n.file == "enable") {
    auto v = parse_enable(std::string_view(buf, size));
    if (!v) return -v.error();
    auto r = ctx.engine->set_enabled(n.system, n.event, *v);
    if (!r) return -r.error().error.err;
    return static_cast<int>(size);
  }
  if (n.file == "trace_marker") {
    const pid_t pid = fuse_get_context()->pid;
    auto r = ctx.engine->write_marker(std::string_view(buf, size), static_cast<uint32_t>(pid), comm_of(pid));
    if (!r) return -r.error().error.err;
    return static_cast<int>(size);
  }
  if (n.file == "synthetic_events") {
    auto r = ctx.engine->write_synthetic(std::string_view(buf, size));
    if (!r) return -r.error().error.err;
    return static_cast<int>(size);
  }
  // As tracefs: one write(2) is one command, and a page is the most it takes.
  if (size >= 4096) return -EINVAL;
  auto r = ctx.engine->write_trigger(n.system, n.event, std::string_view(buf, size));
  if (!r) {
    // The writer gets an errno and error_log one line: the whole story (a
    // verifier log, the compiler's output) goes to histd's log.
    if (!r.error().diagnostic) fmt::print(stderr, "histd: {}:{}: {}\n", n.system, n.event, r.error().message());
    return -r.error().error.err;
  }
  return static_cast<int>(size);
}

int op_truncate(const char* path, off_t, struct fuse_file_info*) {
  Tree::Context& ctx = context();
  const Node n = ctx.resolve(path);
  if (n.kind != Node::Kind::File || !writable(n)) return -EACCES;
  return truncate_file(ctx, n);
}

int op_poll(const char* path, struct fuse_file_info* fi, struct fuse_pollhandle* ph, unsigned* revents) {
  Tree::Context& ctx = context();
  const Node n = ctx.resolve(path);
  const auto* file = reinterpret_cast<const OpenFile*>(fi->fh);
  if (n.file != "hist" || !file) {
    // Everything else is always readable, as a seq_file is.
    *revents = POLLIN | POLLRDNORM;
    if (ph) fuse_pollhandle_destroy(ph);
    return 0;
  }
  if (ctx.engine->version(n.system, n.event) != file->version) {
    *revents = POLLIN | POLLPRI;
    if (ph) fuse_pollhandle_destroy(ph);
    return 0;
  }
  *revents = 0;
  if (ph) {
    std::lock_guard lock(ctx.waiters_mu);
    ctx.waiters.push_back(Waiter{n.system, n.event, file->version, ph});
  }
  return 0;
}

// Big contents (a large table's hist) count as a read whose heap is kept
// for a few seconds.
constexpr size_t kBigContent = 1 << 20;
constexpr std::chrono::seconds kKeepHeapAfterRead{5};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int op_release(const char*, struct fuse_file_info* fi) {
  auto* file = reinterpret_cast<OpenFile*>(fi->fh);
  if (file && file->content.size() >= kBigContent)
    context().trim_at = steady_ns() + std::chrono::nanoseconds(kKeepHeapAfterRead).count();
  delete file;
  fi->fh = 0;
  return 0;
}

void* op_init(struct fuse_conn_info*, struct fuse_config* cfg) {
  // Contents change under us: never cache attributes or data.
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->direct_io = 1;
  // A signal to a reader ends its blocked trace_pipe read: libfuse marks the
  // request interrupted and signals the worker with SIGUSR1, which must then
  // not kill histd (its handler does nothing; fuse_interrupted() tells).
  struct sigaction sa {};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  cfg->intr = 1;
  cfg->intr_signal = SIGUSR1;
  return fuse_get_context()->private_data;
}

}  // namespace

Expected<std::unique_ptr<Tree>> Tree::mount(engine::Engine& engine, const std::filesystem::path& mountpoint,
                                           gid_t group) {
  std::unique_ptr<Tree> tree(new Tree());
  tree->ctx_ = std::make_unique<Context>();
  tree->ctx_->engine = &engine;
  tree->ctx_->group = group;
  for (const catalog::EventId& id : engine.catalog().events()) tree->ctx_->systems[id.system].insert(id.name);

  static const fuse_operations ops = [] {
    fuse_operations o{};
    o.getattr = op_getattr;
    o.readdir = op_readdir;
    o.open = op_open;
    o.read = op_read;
    o.write = op_write;
    o.truncate = op_truncate;
    o.release = op_release;
    o.poll = op_poll;
    o.init = op_init;
    return o;
  }();

  std::vector<std::string> argv_s = {"histd", "-o", "fsname=histd,subtype=histd,allow_other,default_permissions"};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  struct fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  tree->fuse_ = fuse_new(&args, &ops, sizeof(ops), tree->ctx_.get());
  if (!tree->fuse_) return fail(ErrorKind::System, EIO, "fuse_new failed");
  if (fuse_mount(tree->fuse_, mountpoint.c_str()) != 0) {
    fuse_destroy(tree->fuse_);
    tree->fuse_ = nullptr;
    return fail(ErrorKind::System, EIO, "cannot mount FUSE at " + mountpoint.string());
  }
  tree->mountpoint_ = mountpoint;
  tree->mount_id_ = find_mount_id(mountpoint);
  return tree;
}

// BPF updates are invisible to user space until read: pollers are woken by
// checking their events' versions a few times a second.
void Tree::watch_pollers() {
  while (!stop_watch_) {
    std::vector<Waiter> waiters;
    {
      std::lock_guard lock(ctx_->waiters_mu);
      waiters.swap(ctx_->waiters);
    }
    std::vector<Waiter> still;
    for (Waiter& w : waiters) {
      if (ctx_->engine->version(w.system, w.event) != w.version) {
        fuse_notify_poll(w.handle);
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
    if (trim_at != 0 && steady_ns() >= trim_at && ctx_->trim_at.compare_exchange_strong(trim_at, 0))
      malloc_trim(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int Tree::run() {
  stop_watch_ = false;
  std::thread watcher([this] { watch_pollers(); });
  struct fuse_session* se = fuse_get_session(fuse_);
  if (fuse_set_signal_handlers(se) != 0) return -1;
  struct fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, 8);
  int rc = fuse_loop_mt(fuse_, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_remove_signal_handlers(se);
  stop_watch_ = true;
  watcher.join();
  std::lock_guard lock(ctx_->waiters_mu);
  for (Waiter& w : ctx_->waiters) fuse_pollhandle_destroy(w.handle);
  ctx_->waiters.clear();
  return rc;
}

bool Tree::still_mounted() const {
  if (mount_id_ < 0) return true;  // not found at mount: cannot tell, assume so
  // Its id at its mount point: a mount id is reused at once, and a mount
  // made elsewhere right after a umount -l (another histd's, a test's) took
  // this one's, which then read as still mounted.
  return find_mount_id(mountpoint_) == mount_id_;
}

Tree::~Tree() {
  if (fuse_) {
    fuse_unmount(fuse_);
    fuse_destroy(fuse_);
  }
}

}  // namespace histd::fs
