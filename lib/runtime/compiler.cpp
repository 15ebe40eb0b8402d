#include <fcntl.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <cstring>
#include <sstream>
#include <vector>

#include "histd/runtime.h"

extern char** environ;

namespace histd::runtime {

namespace {

namespace fs = std::filesystem;

// FNV-1a: a cache key, not a security boundary; a hit is only trusted after
// the cached source compares equal to the new one.
uint64_t fnv1a(std::string_view data, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char ch : data) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
  return static_cast<bool>(out);
}

// A tool's output can be long (clang prints every error of a unit): the
// message keeps its first `max` bytes, cut at a line end.
std::string head_of(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = text.rfind('\n', max);
  if (cut == std::string::npos || cut == 0) cut = max;
  return text.substr(0, cut) + fmt::format("\n... ({} more bytes of output)\n", text.size() - cut);
}

std::string kernel_release() {
  struct utsname u {};
  uname(&u);
  return u.release;
}

}  // namespace

Expected<BpfPaths> find_bpf_paths() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("HISTD_BPF_DIR")) candidates.emplace_back(env);
  // An installed histd finds its files next to itself: <prefix>/bin/histd
  // and <prefix>/<libdir>/histd/bpf, wherever the prefix was put.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / HISTD_BPF_RELATIVE_DIR);
  candidates.emplace_back(HISTD_BPF_BUILD_DIR);
  candidates.emplace_back(HISTD_BPF_INSTALL_DIR);
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "hist_helpers.bpf.h", ec) && fs::exists(dir / "dispatcher.bpf.o", ec)) {
      BpfPaths p;
      p.include_dir = dir;
      p.dispatcher_object = dir / "dispatcher.bpf.o";
      p.system_include = HISTD_BPF_SYSTEM_INCLUDE;
      p.clang = HISTD_CLANG;
      return p;
    }
  }
  return fail(ErrorKind::NotFound, ENOENT,
              fmt::format("BPF support files not found (looked in HISTD_BPF_DIR, {}, {})", HISTD_BPF_BUILD_DIR,
                          HISTD_BPF_INSTALL_DIR));
}

Compiler::Compiler(BpfPaths paths, fs::path cache_dir) : paths_(std::move(paths)), cache_dir_(std::move(cache_dir)) {}

fs::path Compiler::cache_base(const std::string& source) const {
  // The helper header is part of what the object depends on.
  const std::string helpers = read_file(paths_.include_dir / "hist_helpers.bpf.h") +
                              read_file(paths_.include_dir / "hist_shared.h");
  const uint64_t key = fnv1a(source, fnv1a(helpers, fnv1a(paths_.clang + "\n" + kernel_release())));
  return cache_dir_ / fmt::format("{:016x}", key);
}

void Compiler::evict(const std::string& source) const {
  if (cache_dir_.empty()) return;
  const fs::path base = cache_base(source);
  std::error_code ec;
  fs::remove(base.string() + ".o", ec);
  fs::remove(base.string() + ".c", ec);
}

Expected<std::string> Compiler::compile(const std::string& source) const {
  const std::string helpers = read_file(paths_.include_dir / "hist_helpers.bpf.h") +
                              read_file(paths_.include_dir / "hist_shared.h");
  const fs::path base = cache_base(source);
  const fs::path cached_src = base.string() + ".c";
  const fs::path cached_obj = base.string() + ".o";
  std::error_code ec;
  if (!cache_dir_.empty() && fs::exists(cached_obj, ec) && read_file(cached_src) == source + helpers)
    return read_file(cached_obj);

  auto object = run_clang(source);
  if (!object) return object;
  if (!cache_dir_.empty()) {
    fs::create_directories(cache_dir_, ec);
    // Write the object last under a temporary name so a crash never leaves a
    // source next to a truncated object.
    const fs::path tmp = base.string() + ".o.tmp";
    // A full state directory only costs the cache: leave no partial file behind.
    if (write_file(cached_src, source + helpers) && write_file(tmp, *object)) {
      fs::rename(tmp, cached_obj, ec);
    } else {
      fs::remove(tmp, ec);
      fs::remove(cached_src, ec);
    }
  }
  return object;
}

Expected<std::string> Compiler::run_clang(const std::string& source) const {
  char dir_template[] = "/tmp/histd-cc-XXXXXX";
  if (!mkdtemp(dir_template)) return fail_errno("mkdtemp");
  const fs::path dir = dir_template;
  const fs::path src = dir / "unit.c";
  const fs::path obj = dir / "unit.o";
  const fs::path log = dir / "clang.log";
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  if (!write_file(src, source)) {
    cleanup();
    return fail(ErrorKind::System, EIO, "cannot write " + src.string());
  }

  const std::string inc = "-I" + paths_.include_dir.string();
  const std::string sys = paths_.system_include.string();
  std::vector<std::string> args = {paths_.clang, "-O2", "-g", "-target", "bpf", "-mcpu=v3",       "-Wall", "-Werror",
                                   "-Wno-unused-function", "-Wno-parentheses-equality", inc,     "-idirafter", sys,     "-c",    src.string(),
                                   "-o",                   obj.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    cleanup();
    return fail(ErrorKind::Compile, rc, fmt::format("cannot run {}: {}", paths_.clang, strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                              : fmt::format("signal {}", WTERMSIG(status));
    std::string out = head_of(read_file(log), 4096);
    cleanup();
    return fail(ErrorKind::Compile, EINVAL,
                fmt::format("{} failed on the generated unit ({}; a histd bug, or a broken compiler):\n{}",
                            paths_.clang, how, out));
  }
  std::error_code ec;
  if (!fs::is_regular_file(obj, ec)) {
    cleanup();
    return fail(ErrorKind::Compile, EINVAL, fmt::format("{} succeeded but wrote no object", paths_.clang));
  }
  std::string object = read_file(obj);
  cleanup();
  return object;
}

}  // namespace histd::runtime
