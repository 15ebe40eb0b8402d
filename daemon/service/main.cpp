// SPDX-License-Identifier: GPL-2.0-only
// histd: mounts the tracefs-shaped tree and serves hist triggers on eBPF.
#define FUSE_USE_VERSION 314
#include <fuse3/fuse.h>
#include <systemd/sd-daemon.h>
#include <cstdio>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "control/server.h"
#include "fs/tree.h"
#include "histd/catalog.h"
#include "histd/engine.h"
#include "histd/instances.h"
#include "histd/runtime.h"
#include "service/environment.h"
#include "service/heatmap_sampler.h"
#include "service/instance.h"
#include "service/metrics_listener.h"
#include "service/options.h"
#include "service/reload.h"
#include "service/start_progress.h"
#include "service/startup.h"
#include "service/textfile_writer.h"

namespace {

// Whether two compiler names (paths, or names looked up in PATH) are one file.
bool same_program(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(histd::runtime::resolve_program(a), histd::runtime::resolve_program(b), ec);
}

using histd::daemon::Options;

// The BPF support files and the compilers, as found and as --clang says.
histd::Expected<histd::runtime::BpfPaths> compilers(const Options& opt) {
  using namespace histd;
  auto paths = runtime::find_bpf_paths();
  if (!paths) return paths;
  // Nothing histd does depends on where it was started (every path is
  // absolute by now): a working directory deleted under a foreground histd
  // used to break every compile, clang and histd-cc inheriting it.
  if (chdir("/") != 0) return fail_errno("chdir /");
  if (!opt.clang.empty()) {
    // The resident compiler is the build's clang in process: another
    // compiler is run as it is.
    if (!same_program(opt.clang, paths->clang)) paths->cc_server.clear();
    paths->clang = opt.clang;
  }
  fmt::print(stderr, "histd: BPF support files from {}\n", paths->include_dir.string());
  fmt::print(stderr, "histd: compiler {}\n", paths->clang);
  fmt::print(stderr, "histd: resident compiler {}\n",
             paths->cc_server.empty() ? "none (spawning clang)" : paths->cc_server.string());
  return paths;
}

histd::engine::EngineOptions engine_options(const Options& opt) {
  histd::engine::EngineOptions eopt;
  eopt.state_file = std::filesystem::path(opt.state_dir) / "triggers.json";
  eopt.limits = {.max_triggers = opt.max_triggers,
                 .max_synthetic_events = opt.max_synthetic_events,
                 .max_map_memory = opt.max_map_memory,
                 .percpu_table_limit = opt.percpu_table_limit};
  eopt.deploy.raw_syscalls = opt.raw_syscalls;
  // tp_btf programs need the kernel's BTF; without it, classic tracepoints.
  std::error_code btf_missing;
  eopt.deploy.btf_tracepoints = opt.btf_tracepoints && std::filesystem::exists("/sys/kernel/btf/vmlinux", btf_missing);
  eopt.deploy.triggers_per_program = opt.triggers_per_program;
  eopt.deploy.trace_buffer_size = static_cast<size_t>(opt.trace_buffer_size);
  eopt.compiler = {.stop = std::chrono::seconds(opt.compiler_idle_stop),
                   .shed = std::chrono::seconds(opt.compiler_idle_shed)};
  eopt.defer_consumer = true;
  eopt.deploy.pin_dir = opt.pin_dir;
  // One --max-map-memory for the top tree and its instances together.
  eopt.map_budget = std::make_shared<histd::engine::MapMemoryBudget>();
  // One saved_cmdlines too, as the kernel's: trace-cmd reads the top
  // tree's whichever instance it records.
  eopt.deploy.cmdlines = std::make_shared<histd::trace::Cmdlines>();
  // The kernel's symbols and enum constants, read once for every tree.
  eopt.deploy.kernel_names = std::make_shared<const histd::deploy::KernelNames>();
  return eopt;
}

// From a mounted tree to the end: daemonize, listen, serve until a signal
// or until the tree goes away, then detach and unmount.
// --metrics-listen: the metrics socket and the exporter on the port (none: off).
// --textfile-dir: the writer of DIR/histd.prom (none: off).
struct Metrics {
  std::unique_ptr<histd::control::Server> socket;
  std::unique_ptr<histd::daemon::MetricsListener> listener;
  std::unique_ptr<histd::daemon::TextfileWriter> textfile;
  // The page's heatmaps: the tables' history, kept while the page is served.
  std::unique_ptr<histd::daemon::HeatmapSampler> sampler;
};

// The heatmaps' width: --page-interval seconds each (10 s: the last 10 minutes).
constexpr size_t kHeatmapIntervals = 60;

histd::control::ServerLimits server_limits(const Options& opt) {
  histd::control::ServerLimits limits;
  limits.metrics_max_series = opt.metrics_max_series;
  return limits;
}

histd::Expected<Metrics> open_metrics(const Options& opt) {
  Metrics m;
  if (!opt.textfile_dir.empty())
    m.textfile =
        HISTD_TRY(histd::daemon::TextfileWriter::open(opt.textfile_dir, std::chrono::seconds(opt.textfile_interval)));
  if (opt.metrics_listen.empty()) return m;
  const std::filesystem::path sock = std::filesystem::path(opt.socket).parent_path() / "metrics.sock";
  m.listener = HISTD_TRY(histd::daemon::MetricsListener::open(opt.metrics_listen, opt.metrics_user, sock));
  m.socket = HISTD_TRY(histd::control::Server::open_metrics(sock, m.listener->gid(), server_limits(opt)));
  m.sampler =
      std::make_unique<histd::daemon::HeatmapSampler>(std::chrono::seconds(opt.page_interval), kHeatmapIntervals);
  return m;
}

int serve(const Options& opt, histd::engine::Engine& eng, histd::instances::Instances& instances,
          std::unique_ptr<histd::fs::Tree> tree, std::unique_ptr<histd::control::Server> server, Metrics metrics,
          histd::daemon::Reloader& reloader) {
  using namespace histd;
  if (fuse_daemonize(opt.foreground ? 1 : 0) != 0) {
    fmt::print(stderr, "histd: cannot daemonize\n");
    return 1;
  }
  // Threads do not survive the fork in fuse_daemonize: start them after it.
  eng.start_consumer();
  instances.start_consumers();
  reloader.start(eng);
  if (opt.config_dir.empty())
    server->start(eng, {}, &instances);
  else
    server->start(
        eng, [&reloader, &eng] { return reloader.reload(eng); }, &instances);
  if (metrics.socket) {
    metrics.sampler->start([&eng] { return control::histogram_events(eng); });
    metrics.socket->start(eng, {}, &instances, [s = metrics.sampler.get()] { return s->history(); });
    metrics.listener->start();
  }
  if (metrics.textfile)
    metrics.textfile->start([&eng, &instances, &opt] {
      return control::metrics_text(eng, &instances, {render::MetricsFormat::Prometheus, opt.metrics_max_series});
    });
  // Under systemd (Type=notify) the service is ready once the tree is
  // mounted and the socket listens; what the start said it was doing
  // (daemon::StartProgress) is over.
  sd_notify(0, "READY=1\nSTATUS=");
  const int rc = tree->run();
  // The loop ends on SIGTERM/SIGINT (libfuse returns the signal's number;
  // SIGHUP reloads, daemon::Reloader) with the tree still mounted, or
  // because the tree went away
  // under histd (umount, umount -l: the kernel ends the FUSE session). A
  // tree that vanished is a fault: histd says so and exits with a failure,
  // so that systemd (Restart=on-failure) starts it again and mounts a new
  // tree. Triggers are in the state file after every change and pinned
  // tables keep their counts, so the restart loses nothing.
  const bool unmounted = !tree->still_mounted();
  sd_notify(0, unmounted ? "STOPPING=1\nSTATUS=the tree was unmounted under histd" : "STOPPING=1");
  if (unmounted)
    fmt::print(stderr, "histd: the tree at {} was unmounted under histd (the FUSE session ended): exiting\n",
               opt.mount);
  else if (rc < 0)
    fmt::print(stderr, "histd: the FUSE loop failed ({})\n", strerror(-rc));
  metrics.listener.reset();  // the exporter ends first, then its socket
  metrics.socket.reset();
  metrics.sampler.reset();
  metrics.textfile.reset();
  server.reset();
  reloader.stop();
  // Detach every program before the tree goes away, then unmount.
  instances.shutdown();
  eng.shutdown();
  tree.reset();
  return unmounted || rc < 0 ? 1 : 0;
}

// The engine from its saved state and the configuration, then the
// instances, saying each phase to systemd (`progress`).
histd::Expected<std::unique_ptr<histd::engine::Engine>> restore_engine(const Options& opt,
                                                                       const histd::engine::EngineOptions& eopt,
                                                                       histd::catalog::Catalog catalog,
                                                                       histd::daemon::Reloader& reloader,
                                                                       histd::daemon::StartProgress& progress) {
  using namespace histd;
  progress.phase("starting the compiler");
  auto paths = HISTD_TRY(compilers(opt));
  // Every change is saved before it is kept: say at once when none can be.
  if (access(opt.state_dir.c_str(), W_OK) != 0)
    fmt::print(stderr,
               "histd: the state directory {} is not writable ({}): trigger changes will be refused until it is\n",
               opt.state_dir, strerror(errno));
  std::error_code ec;
  std::filesystem::create_directories(opt.mount, ec);
  // Compiled objects are kept beside the saved triggers (runtime::ObjectCache).
  runtime::Compiler compiler(paths, std::filesystem::path(opt.state_dir) / "cache");
  auto eng = HISTD_TRY(engine::Engine::create(std::move(catalog), std::move(compiler), eopt));
  // Compiling every saved trigger again (a new compiler), or a first
  // configuration, is most of a slow start.
  progress.watch(eng->shared_compiler());
  progress.phase("restoring saved triggers");
  for (const std::string& problem : eng->restorer().restore())
    fmt::print(stderr, "histd: could not restore: {}\n", problem);
  // What was saved first (its counts, and what the configuration held
  // then), then the files as they are now: changed, added, removed.
  progress.phase("applying the configuration directory");
  if (!opt.config_dir.empty()) (void)reloader.reload(*eng);
  return eng;
}

// The events of --tracefs, or of the tracefs histd finds (or mounts).
histd::Expected<histd::catalog::Catalog> open_catalog(const Options& opt) {
  std::filesystem::path tracefs_root = opt.tracefs;
  if (tracefs_root.empty()) {
    auto found = histd::catalog::find_tracefs();
    if (!found) return histd::unexpected(std::move(found).error());
    tracefs_root = *found;
  }
  return histd::catalog::Catalog::open(tracefs_root);
}

histd::instances::Options instances_options(const Options& opt, const histd::engine::EngineOptions& eopt) {
  return histd::instances::Options{
      eopt, std::filesystem::path(opt.state_dir) / "instances",
      opt.pin_dir.empty() ? std::filesystem::path() : std::filesystem::path(opt.pin_dir) / "instances",
      opt.max_instances};
}

int run(const Options& opt) {
  using namespace histd;
  runtime::init_libbpf(opt.verbose);
  auto failed = [](const Error& e) {
    fmt::print(stderr, "histd: {}\n", e.context);
    return 1;
  };
  // Under systemd, more time is asked for from the first moment: any phase
  // of a start may be slow on a busy machine.
  std::optional<daemon::StartProgress> progress;
  progress.emplace("starting");
  progress->phase("checking options");
  // Every check and every claim before anything is mounted, bound or pinned:
  // a refused histd changes nothing (another one's tree, socket and pins
  // included).
  gid_t group = 0;
  if (auto ok = daemon::check_options(opt, group); !ok) return failed(ok.error());
  // What the machine or container must grant (bpf(), perf events, FUSE,
  // tracefs, bpffs): a missing piece named in one line, with how to grant it.
  if (auto ok = daemon::check_environment(opt); !ok) return failed(ok.error());
  for (const std::string& note : daemon::kernel_notes()) fmt::print(stderr, "histd: {}\n", note);
  auto instance = daemon::Instance::claim(opt);
  if (!instance) return failed(instance.error());
  // The control socket before anything is mounted: a refused path (a file
  // that is not a stale socket, a directory others may change) stops histd
  // here. It answers from start(), after the fork.
  auto server = control::Server::open(opt.socket, group, server_limits(opt));
  if (!server) return failed(server.error());
  // The metrics port is bound now, and the exporter's user checked: a
  // refusal stops histd before it mounts anything.
  auto metrics = open_metrics(opt);
  if (!metrics) return failed(metrics.error());
  // SIGHUP reloads from here on (until now it would end histd, as it did
  // before histd read a configuration directory).
  auto reloader = daemon::Reloader::install(opt.config_dir);
  if (!reloader) return failed(reloader.error());
  progress->phase("reading the events");
  auto catalog = open_catalog(opt);
  if (!catalog) return failed(catalog.error());
  // One map memory budget for the top tree and its instances.
  const engine::EngineOptions eopt = engine_options(opt);
  auto eng = restore_engine(opt, eopt, std::move(*catalog), **reloader, *progress);
  if (!eng) return failed(eng.error());
  // The tree's instances (mkdir instances/NAME), as saved: after the top
  // tree, whose compiler they share.
  progress->phase("restoring instances");
  instances::Instances inst(**eng, instances_options(opt, eopt));
  for (const std::string& problem : inst.restore()) fmt::print(stderr, "histd: could not restore: {}\n", problem);
  progress.reset();
  auto tree = fs::Tree::mount(**eng, opt.mount, group, &inst);
  if (!tree) return failed(tree.error());
  return serve(opt, **eng, inst, std::move(*tree), std::move(*server), std::move(*metrics), **reloader);
}

// Every trigger holds file descriptors, its tables' maps: ~3.5 a plain
// trigger (~9 while each loaded program kept its libbpf object), so about
// 300 triggers pass 1024. systemd starts services with a soft limit of 1024
// (hard 524288), and past it every open fails with EMFILE (a hist read
// among them). As systemd advises, a program that needs more raises its
// soft limit to the hard one; histd uses poll, never select.
void raise_open_files_limit() {
  struct rlimit r {};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  r.rlim_cur = r.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0)
    fmt::print(stderr, "histd: cannot raise the open files limit: {}\n", strerror(errno));
}

// Reading a big table allocates tens of MB (entries, sort order, text) and
// frees it. By default glibc maps such blocks afresh and unmaps them on free,
// so every read faulted in every page again: on a VM that was half of a 100k
// entry read. Keep them in one heap instead; the tree trims it once reads
// stop (fs::Tree, kKeepHeapAfterRead).
void keep_freed_heap() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  // One arena: renders run on several FUSE threads at once now, but a big
  // read is rare and one heap keeps idle RSS low (the tree trims it).
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace

// --metrics-*, --textfile-*: how the tables reach Prometheus (docs/metrics.md).
void add_metrics_options(CLI::App& app, Options& opt) {
  app.add_option("--metrics-listen", opt.metrics_listen,
                 "serve every table as Prometheus metrics at http://ADDRESS:PORT/metrics and as a page with bar "
                 "charts at / (127.0.0.1:9464, [::1]:9464, :9464 for every address; default: off), from "
                 "histd-exporter run as --metrics-user");
  app.add_option("--metrics-user", opt.metrics_user,
                 "the user histd-exporter runs as: a user of its own (not root, not nobody, no other program's), "
                 "without capabilities; it may read the metrics only")
      ->capture_default_str();
  app.add_option("--metrics-max-series", opt.metrics_max_series,
                 "label sets of a table a scrape writes; the others are counted in histd_metrics_series_dropped")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{10000000}));
  app.add_option("--page-interval", opt.page_interval,
                 "seconds a column of the page's latency heatmaps spans (the page shows the last 60)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--textfile-dir", opt.textfile_dir,
                 "write the metrics to DIR/histd.prom every --textfile-interval seconds, whole (renamed into "
                 "place), for node_exporter's textfile collector (default: off)");
  app.add_option("--textfile-interval", opt.textfile_interval, "seconds between writes of --textfile-dir")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
}

namespace {

// Where histd mounts, listens, keeps its state and reads events, and who
// may use them.
void add_place_options(CLI::App& app, Options& opt) {
  app.add_flag("-f,--foreground", opt.foreground, "stay in the foreground");
  app.add_option("--mount", opt.mount, "where to mount the tree")->capture_default_str();
  app.add_option("--socket", opt.socket, "control socket for histctl")->capture_default_str();
  app.add_option("--state-dir", opt.state_dir, "compiled-object cache and saved state")->capture_default_str();
  app.add_option("--pin-dir", opt.pin_dir, "bpffs directory where tables are pinned (empty: none)")
      ->capture_default_str();
  app.add_option("--group", opt.group,
                 "a group whose members may read the tree, use the control socket and change triggers too "
                 "(default: root only)");
  app.add_option("--tracefs", opt.tracefs, "tracefs root to read event formats from (default: find or mount it)");
  app.add_option("--clang", opt.clang, "the clang that compiles generated BPF units (default: the build's)");
  app.add_option("--config-dir", opt.config_dir,
                 "triggers and synthetic events declared in DIR/*.conf, applied at start and on SIGHUP or "
                 "`histctl reload` (a missing directory declares none; empty: none read)")
      ->capture_default_str();
}

// --max-*, --percpu-table-limit, --trace-buffer-size: what histd may take.
void add_limit_options(CLI::App& app, Options& opt) {
  app.add_option("--max-triggers", opt.max_triggers,
                 fmt::format("triggers alive at once, across events (at most {})", histd::engine::kMaxTriggers))
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, histd::engine::kMaxTriggers));
  app.add_option("--max-synthetic-events", opt.max_synthetic_events,
                 fmt::format("synthetic events defined at once (at most {})", histd::engine::kMaxSyntheticEvents))
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, histd::engine::kMaxSyntheticEvents));
  app.add_option("--max-map-memory", opt.max_map_memory,
                 "BPF map memory for the triggers' tables and variables, of the top tree and every instance "
                 "together, in bytes or with a suffix (64M, 1G)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
  app.add_option("--max-instances", opt.max_instances, "instances (mkdir instances/NAME) at once")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, histd::instances::kMaxInstances));
  app.add_option("--percpu-table-limit", opt.percpu_table_limit,
                 "a table that would take more bytes than this as a per-CPU hash is one hash shared by all CPUs "
                 "(atomic adds)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
  app.add_option("--trace-buffer-size", opt.trace_buffer_size,
                 "bytes of text the trace and snapshot buffers each hold (4096 or more; suffixes as above)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 40));
}

// How events are attached and programs compiled, and when the resident
// compiler gives back its memory.
void add_program_options(CLI::App& app, Options& opt) {
  app.add_option("--raw-syscalls", opt.raw_syscalls,
                 "attach syscall events through the raw sys_enter/sys_exit tracepoints where their records can be "
                 "rebuilt exactly: cheaper per traced call, dearer on every other system call")
      ->capture_default_str();
  app.add_option("--btf-tracepoints", opt.btf_tracepoints,
                 "attach the scheduler's events (sched_switch, the wakeups) BTF-typed, building their records from "
                 "the tracepoint's arguments: cheaper per event, never skipped while another BPF program runs "
                 "(needs the kernel's BTF; false: the classic tracepoints)")
      ->capture_default_str();
  // The old name, from when only plain triggers were chained, still works.
  app.add_option("--triggers-per-program,--plain-triggers-per-program", opt.triggers_per_program,
                 "an attached event's hist triggers are compiled this many to a BPF program (the event program "
                 "holds as many with variables, references or actions), the event's programs chained by tail "
                 "calls: a new trigger compiles one small program (0: one program per event, as many triggers as "
                 "its 64 maps hold)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--compiler-idle-shed", opt.compiler_idle_shed,
                 "seconds without a compile after which the resident compiler histd-cc gives back its memory but "
                 "its libraries' relocated data (~12 MiB) and stays; the next compile faults back what it needs "
                 "(0: it keeps it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400 * 365));
  app.add_option("--compiler-idle-stop", opt.compiler_idle_stop,
                 "seconds without a compile after which histd-cc stops altogether; it starts again when a trigger "
                 "file is opened for writing, and the first compile then waits for its start (0: it stays)")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400 * 365));
}

// Daemonizing changes the working directory to /: keep relative paths meaningful.
void make_paths_absolute(Options& opt) {
  opt.mount = std::filesystem::absolute(opt.mount).string();
  opt.socket = std::filesystem::absolute(opt.socket).string();
  opt.state_dir = std::filesystem::absolute(opt.state_dir).string();
  if (!opt.tracefs.empty()) opt.tracefs = std::filesystem::absolute(opt.tracefs).string();
  if (!opt.config_dir.empty()) opt.config_dir = std::filesystem::absolute(opt.config_dir).string();
  if (!opt.pin_dir.empty()) opt.pin_dir = std::filesystem::absolute(opt.pin_dir).string();
  if (!opt.textfile_dir.empty()) opt.textfile_dir = std::filesystem::absolute(opt.textfile_dir).string();
  if (opt.clang.find('/') != std::string::npos) opt.clang = std::filesystem::absolute(opt.clang).string();
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_heap();
  raise_open_files_limit();
  CLI::App app{"histd: the kernel's hist trigger language on eBPF, served as a tracefs-shaped FUSE tree"};
  Options opt;
  add_place_options(app, opt);
  add_limit_options(app, opt);
  add_program_options(app, opt);
  add_metrics_options(app, opt);
  app.add_flag("-v,--verbose", opt.verbose, "print libbpf's messages");
  app.set_version_flag("--version", std::string("histd ") + HISTD_VERSION, "print histd's version and exit");
  // Every option can also come from a config file (key = value lines, the
  // option names without dashes), e.g. /etc/histd/histd.conf.
  app.set_config("--config", "", "read options from this file");
  // A misspelt key must not be a setting silently not applied.
  app.allow_config_extras(CLI::config_extras_mode::error);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    // CLI11 says "INI was not able to parse KEY": not the file, nor what a key is.
    std::string_view what = e.what();
    constexpr std::string_view kCli11 = "INI was not able to parse ";
    if (what.starts_with(kCli11)) what.remove_prefix(kCli11.size());
    std::fprintf(stderr,
                 "histd: %s: no option %.*s (a key is one of histd's options, histd --help, without its dashes)\n",
                 app.get_option("--config")->as<std::string>().c_str(), int(what.size()), what.data());
    return 1;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  make_paths_absolute(opt);
  return run(opt);
}
