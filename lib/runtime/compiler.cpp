// SPDX-License-Identifier: GPL-2.0-only
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "histd/digest.h"
#include "histd/runtime.h"
#include "runtime/cc_client.h"
#include "runtime/object_cache.h"
#include "runtime/resident.h"

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

// The headers units include (every unit all but btf_entry.bpf.h, which a
// unit entered BTF-typed includes too; CMakeLists.txt installs them): part
// of what an object depends on, so a cached object built from other texts
// is not used.
constexpr std::string_view kUnitHeaders[] = {"hist_helpers.bpf.h",  "hist_shared.h", "probe_entry.bpf.h",
                                             "syscall_entry.bpf.h", "chain.bpf.h",   "event_pids.bpf.h",
                                             "btf_entry.bpf.h"};

std::string helper_text(const BpfPaths& paths) {
  std::string text;
  for (std::string_view header : kUnitHeaders) text += read_file(paths.include_dir / header);
  return text;
}

// A tool's output can be long (clang prints every error of a unit): the
// message keeps its first `max` bytes, cut at a line end.
std::string head_of(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = text.rfind('\n', max);
  if (cut == std::string::npos || cut == 0) cut = max;
  return text.substr(0, cut) + fmt::format("\n... ({} more bytes of output)\n", text.size() - cut);
}

// What the cache key knows of a compiler file: where it really is, its size
// and when it changed. A package upgrade or a rebuild changes one of them.
std::string file_identity(const fs::path& p) {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec);
  if (ec) return p.string() + " (missing)\n";
  const auto size = fs::file_size(real, ec);
  const auto mtime = fs::last_write_time(real, ec).time_since_epoch().count();
  return fmt::format("{} {} {}\n", real.string(), size, mtime);
}

// The driver arguments after argv[0], the same for clang and histd-cc.
// -g for the BTF libbpf needs (the maps' types, the verifier's source
// lines); DWARF 4 because clang 14's default, 5, has the front end take an
// MD5 of every file the unit reads, libbpf's 4000-line helper header too,
// for DWARF that nothing reads (~1.5 ms of a ~28 ms compile in histd-cc).
std::vector<std::string> clang_args(const BpfPaths& paths, const std::string& src, const std::string& obj) {
  return {"-O2",
          "-gdwarf-4",
          "-target",
          "bpf",
          "-mcpu=v3",
          "-Wall",
          "-Werror",
          "-Wno-unused-function",
          "-Wno-parentheses-equality",
          "-I" + paths.include_dir.string(),
          "-idirafter",
          paths.system_include.string(),
          "-c",
          src,
          "-o",
          obj};
}

// The first line of every compile failure, from clang spawned or in histd-cc.
std::string compile_failed(const std::string& compiler, const std::string& how) {
  return fmt::format("{} failed on the generated unit ({}; a histd bug, or a broken compiler):\n", compiler, how);
}

}  // namespace

fs::path resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

Expected<BpfPaths> find_bpf_paths() {
  std::vector<fs::path> candidates;
  // Absolute: histd moves to / after finding them, and histd-cc runs there.
  std::error_code ec;
  if (const char* env = std::getenv("HISTD_BPF_DIR")) candidates.push_back(fs::absolute(env, ec));
  // An installed histd finds its files next to itself: <prefix>/bin/histd
  // and <prefix>/<libdir>/histd/bpf, wherever the prefix was put.
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / HISTD_BPF_RELATIVE_DIR);
  candidates.emplace_back(HISTD_BPF_BUILD_DIR);
  candidates.emplace_back(HISTD_BPF_INSTALL_DIR);
  for (const fs::path& dir : candidates) {
    if (fs::exists(dir / "hist_helpers.bpf.h", ec) && fs::exists(dir / "dispatcher.bpf.o", ec) &&
        fs::exists(dir / "syscall_dispatcher.bpf.o", ec)) {
      BpfPaths p;
      p.include_dir = dir;
      p.dispatcher_object = dir / "dispatcher.bpf.o";
      p.syscall_dispatcher_object = dir / "syscall_dispatcher.bpf.o";
      p.system_include = HISTD_BPF_SYSTEM_INCLUDE;
      p.clang = HISTD_CLANG;
      // histd-cc sits next to histd (bin/ of the build tree or of the
      // prefix), like the BPF files are found from histd's own path.
      if (const char* env = std::getenv("HISTD_CC")) {
        if (*env) p.cc_server = fs::absolute(env, ec);
      } else {
        std::vector<fs::path> servers;
        if (!exe.empty()) servers.push_back(exe.parent_path() / "histd-cc");
        servers.emplace_back(HISTD_CC_INSTALL_PATH);
        servers.emplace_back(HISTD_CC_BUILD_PATH);
        for (const fs::path& s : servers) {
          if (access(s.c_str(), X_OK) == 0) {
            p.cc_server = s;
            break;
          }
        }
      }
      return p;
    }
  }
  return fail(ErrorKind::NotFound, ENOENT,
              fmt::format("BPF support files not found (looked in HISTD_BPF_DIR, {}, {})", HISTD_BPF_BUILD_DIR,
                          HISTD_BPF_INSTALL_DIR));
}

Compiler::Compiler(BpfPaths paths, fs::path cache_dir)
    : paths_(std::move(paths)),
      cache_dir_(std::move(cache_dir)),
      resident_(std::make_unique<Resident>(paths_.cc_server)) {
  compiler_identity_ = file_identity(resolve_program(paths_.clang));
  if (!paths_.cc_server.empty()) {
    compiler_identity_ += file_identity(paths_.cc_server);
    // The clang and LLVM libraries histd-cc runs, as found when it was built.
    std::string libs = HISTD_CC_LIBS;
    for (size_t start = 0; start < libs.size();) {
      size_t end = libs.find(':', start);
      if (end == std::string::npos) end = libs.size();
      compiler_identity_ += file_identity(libs.substr(start, end - start));
      start = end + 1;
    }
  }
  // OpenSSL reads its configuration and loads its providers at the first
  // digest (~3 ms here): now, not in the first trigger's write, whose
  // object the cache stores with its SHA-256.
  if (!cache_dir_.empty()) (void)sha256_hex({});
}

std::string Compiler::cache_name(const std::string& source, const std::string& helpers) const {
  return fmt::format("{:016x}", fnv1a(source, fnv1a(helpers, fnv1a(compiler_identity_ + this_kernel_release()))));
}

void Compiler::evict(const std::string& source) const {
  ObjectCache(cache_dir_).evict(cache_name(source, helper_text(paths_)));
}

Expected<std::string> Compiler::compile(const std::string& source) const {
  const std::string helpers = helper_text(paths_);
  const std::string name = cache_name(source, helpers);
  const ObjectCache cache(cache_dir_);
  if (auto hit = cache.find(name, source + helpers)) return std::move(*hit);
  auto object = compile_uncached(source);
  if (object) cache.store(name, source + helpers, *object);
  return object;
}

std::optional<std::string> Compiler::cached(const std::string& source) const {
  const std::string helpers = helper_text(paths_);
  return ObjectCache(cache_dir_).find(cache_name(source, helpers), source + helpers);
}

void Compiler::set_prelude(const std::string& lines) {
  resident_->set_primer({clang_args(paths_, "unit.c", "unit.o"), "unit.c",
                         "/* histd: what histd-cc precompiles */\n" + lines + "char histd_primer;\n"});
}

Expected<std::string> Compiler::compile_uncached(const std::string& source) const {
  // The input name is what diagnostics show; the output is never written.
  if (auto reply = resident_->ask({clang_args(paths_, "unit.c", "unit.o"), "unit.c", source})) {
    if (reply->status == cc::CcStatus::Object) return std::move(reply->payload);
    return fail(ErrorKind::Compile, EINVAL, compile_failed(paths_.clang, "in histd-cc") + reply->payload);
  }
  resident_->count_clang();
  return run_clang(source);
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

  std::vector<std::string> args = clang_args(paths_, src.string(), obj.string());
  args.insert(args.begin(), paths_.clang);
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
    return fail(ErrorKind::Compile, EINVAL, compile_failed(paths_.clang, how) + out);
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
