// histd: mounts the tracefs-shaped tree and serves hist triggers on eBPF.
#define FUSE_USE_VERSION 314
#include <fuse3/fuse.h>
#include <systemd/sd-daemon.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <linux/magic.h>
#include <sys/mount.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <filesystem>

#include "control/server.h"
#include "fs/tree.h"
#include "histd/catalog.h"
#include "histd/engine.h"
#include "histd/runtime.h"

namespace {

struct Options {
  bool foreground = false;
  bool verbose = false;
  std::string mount = "/run/histd/tracing";
  std::string socket = "/run/histd/histd.sock";
  std::string state_dir = "/var/lib/histd";
  std::string tracefs;  // default: find it (mounting tracefs if needed)
  std::string pin_dir = "/sys/fs/bpf/histd";
  std::string group;  // may change triggers besides root
};

// bpffs where the pin directory lives, mounted at /sys/fs/bpf when nothing is.
bool ensure_bpffs(const std::filesystem::path& pin_dir) {
  struct statfs st {};
  if (statfs(pin_dir.parent_path().c_str(), &st) == 0 && st.f_type == BPF_FS_MAGIC) return true;
  if (pin_dir.parent_path() != "/sys/fs/bpf") return false;
  return mount("bpf", "/sys/fs/bpf", "bpf", 0, nullptr) == 0;
}

int run(const Options& opt) {
  using namespace histd;
  runtime::init_libbpf(opt.verbose);

  std::filesystem::path tracefs_root = opt.tracefs;
  if (tracefs_root.empty()) {
    auto found = catalog::find_tracefs();
    if (!found) {
      fmt::print(stderr, "histd: {}\n", found.error().context);
      return 1;
    }
    tracefs_root = *found;
  }
  auto catalog = catalog::Catalog::open(tracefs_root);
  if (!catalog) {
    fmt::print(stderr, "histd: {}\n", catalog.error().context);
    return 1;
  }
  auto paths = runtime::find_bpf_paths();
  if (!paths) {
    fmt::print(stderr, "histd: {}\n", paths.error().context);
    return 1;
  }
  fmt::print(stderr, "histd: BPF support files from {}\n", paths->include_dir.string());
  fmt::print(stderr, "histd: resident compiler {}\n",
             paths->cc_server.empty() ? "none (spawning clang)" : paths->cc_server.string());
  gid_t group = 0;
  if (!opt.group.empty()) {
    struct group* g = getgrnam(opt.group.c_str());
    if (!g) {
      fmt::print(stderr, "histd: no group {}\n", opt.group);
      return 1;
    }
    group = g->gr_gid;
  }
  std::error_code ec;
  std::filesystem::create_directories(opt.state_dir, ec);
  // Saved triggers and compiled objects are histd's alone.
  std::filesystem::permissions(opt.state_dir, std::filesystem::perms::owner_all, ec);
  // A previous histd that died (kill -9) leaves its FUSE mount behind,
  // disconnected: detach it before mounting again.
  struct stat mst {};
  if (stat(opt.mount.c_str(), &mst) != 0 && errno == ENOTCONN) umount2(opt.mount.c_str(), MNT_DETACH);
  std::filesystem::create_directories(opt.mount, ec);
  engine::EngineOptions eopt;
  eopt.cache_dir = std::filesystem::path(opt.state_dir) / "cache";
  eopt.state_file = std::filesystem::path(opt.state_dir) / "triggers.json";
  if (!opt.pin_dir.empty()) {
    if (ensure_bpffs(opt.pin_dir)) {
      eopt.pin_dir = opt.pin_dir;
    } else {
      fmt::print(stderr, "histd: no bpffs for {}: tables will not outlive histd\n", opt.pin_dir);
    }
  }
  auto eng = engine::Engine::create(std::move(*catalog), runtime::Compiler(*paths, eopt.cache_dir), eopt);
  if (!eng) {
    fmt::print(stderr, "histd: {}\n", eng.error().context);
    return 1;
  }
  for (const std::string& problem : (*eng)->restore())
    fmt::print(stderr, "histd: could not restore a trigger: {}\n", problem);
  auto tree = fs::Tree::mount(**eng, opt.mount, group);
  if (!tree) {
    fmt::print(stderr, "histd: {}\n", tree.error().context);
    return 1;
  }
  if (fuse_daemonize(opt.foreground ? 1 : 0) != 0) {
    fmt::print(stderr, "histd: cannot daemonize\n");
    return 1;
  }
  // Threads do not survive the fork in fuse_daemonize: start the server after it.
  auto server = control::Server::start(**eng, opt.socket, group);
  if (!server) {
    fmt::print(stderr, "histd: {}\n", server.error().context);
    return 1;
  }
  // Under systemd (Type=notify) the service is ready once the tree is
  // mounted and the socket listens.
  sd_notify(0, "READY=1");
  int rc = (*tree)->run();
  sd_notify(0, "STOPPING=1");
  server->reset();
  // Detach every program before the tree goes away, then unmount.
  (*eng)->shutdown();
  tree->reset();
  return rc == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"histd: the kernel's hist trigger language on eBPF, served as a tracefs-shaped FUSE tree"};
  Options opt;
  app.add_flag("-f,--foreground", opt.foreground, "stay in the foreground");
  app.add_option("--mount", opt.mount, "where to mount the tree")->capture_default_str();
  app.add_option("--socket", opt.socket, "control socket for histctl")->capture_default_str();
  app.add_option("--state-dir", opt.state_dir, "compiled-object cache and saved state")->capture_default_str();
  app.add_option("--pin-dir", opt.pin_dir, "bpffs directory where tables are pinned (empty: none)")
      ->capture_default_str();
  app.add_option("--group", opt.group, "a group whose members may change triggers too (default: root only)");
  app.add_option("--tracefs", opt.tracefs, "tracefs root to read event formats from (default: find or mount it)");
  app.add_flag("-v,--verbose", opt.verbose, "print libbpf's messages");
  // Every option can also come from a config file (key = value lines, the
  // option names without dashes), e.g. /etc/histd/histd.conf.
  app.set_config("--config", "", "read options from this file");
  CLI11_PARSE(app, argc, argv);
  // Daemonizing changes the working directory to /: keep relative paths meaningful.
  opt.mount = std::filesystem::absolute(opt.mount).string();
  opt.socket = std::filesystem::absolute(opt.socket).string();
  opt.state_dir = std::filesystem::absolute(opt.state_dir).string();
  if (!opt.tracefs.empty()) opt.tracefs = std::filesystem::absolute(opt.tracefs).string();
  if (!opt.pin_dir.empty()) opt.pin_dir = std::filesystem::absolute(opt.pin_dir).string();
  return run(opt);
}
