// SPDX-License-Identifier: GPL-2.0-only
// histd-cc: histd's resident compiler. A clang process spends most of a
// generated unit's compile starting up (loading and relocating libLLVM and
// libclang-cpp); this server pays that once, when histd starts it, and then
// compiles each request in process with the clang library, answering with the
// object or the diagnostics (framing: lib/runtime/cc_protocol.h).
//
// The request carries the clang driver arguments histd would spawn clang
// with; the server runs the same driver to turn them into the cc1 invocation
// and executes it as clang itself does in process, but for a generated
// unit's optimization: a short pipeline of its own instead of -O2's
// (optimize.h), for programs as small in about two thirds of the time. The
// source stays in memory (an overlay file system), and so does the object.
//
// Requests are compiled one after another in this process, each with its own
// CompilerInstance, file system overlay and diagnostics (clang's library is
// made to be reused so: clangd, clang-repl). With --fork each is compiled in
// a child instead, which isolates compiles completely but, measured here,
// costs about three times the CPU of compiling in process (85 vs 28 ms for a
// generated unit, against 150 ms for spawning clang): histd does not use it.
// A crash ends the server; histd then compiles that unit with clang and
// starts a new server.
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Driver/Tool.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/FrontendTool/Utils.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "file_cache.h"
#include "optimize.h"
#include "prelude.h"
#include "runtime/cc_protocol.h"
#include "shed.h"

namespace {

using histd::cc_server::kPreludeHeader;
using histd::cc_server::Prelude;
using histd::runtime::cc::CcRequest;
using histd::runtime::cc::CcStatus;

struct Answer {
  CcStatus status = CcStatus::Failed;
  std::string payload;
};

// The driver finds clang's resource directory (builtin headers) from the
// path of a clang binary: the one of the library this server links.
constexpr const char* kClangPath = HISTD_CC_CLANG_PATH;

// What every compile reads from: the real file system, the files compiles
// read before kept in memory (file_cache.h).
using Files = llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>;

// The source, and the prelude's text, in memory where the arguments name
// them, over `real`; null when the source's path cannot be made absolute.
llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> files_with_source(const CcRequest& req, const Files& real,
                                                                         const std::string* prelude) {
  llvm::SmallString<256> input(req.input);
  if (real->makeAbsolute(input)) return nullptr;
  llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> memory(new llvm::vfs::InMemoryFileSystem);
  memory->addFile(input, 0, llvm::MemoryBuffer::getMemBufferCopy(req.source, input));
  if (prelude) memory->addFile(kPreludeHeader, 0, llvm::MemoryBuffer::getMemBufferCopy(*prelude, kPreludeHeader));
  llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> files(new llvm::vfs::OverlayFileSystem(real));
  files->pushOverlay(memory);
  return files;
}

// The arguments of the compilation's one job, a clang -cc1, without the
// "-cc1"; false when the driver made anything else.
bool cc1_arguments(const clang::driver::Compilation& compilation, std::vector<const char*>& cc1_args) {
  const clang::driver::JobList& jobs = compilation.getJobs();
  if (jobs.size() != 1 || std::strcmp(jobs.begin()->getCreator().getName(), "clang") != 0) return false;
  cc1_args.assign(jobs.begin()->getArguments().begin(), jobs.begin()->getArguments().end());
  if (!cc1_args.empty() && std::strcmp(cc1_args.front(), "-cc1") == 0) cc1_args.erase(cc1_args.begin());
  return true;
}

// Runs the invocation made in `ci` as clang runs cc1 in process, but with
// `files` for its file system and the object into `object`.
bool run_cc1(clang::CompilerInstance& ci, llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> files,
             llvm::SmallString<0>& object, llvm::raw_ostream& diag_out) {
  // Diagnostics go to a string: no colours even when histd's stderr is a
  // terminal (clang would see its log file there).
  ci.getDiagnosticOpts().ShowColors = false;
  // The driver passes -disable-free: a clang process exits without freeing
  // its AST; a server that did the same would grow by ~0.5 MiB a unit.
  ci.getFrontendOpts().DisableFree = false;
  ci.getCodeGenOpts().DisableFree = false;
  ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_out, &ci.getDiagnosticOpts()), true);
  ci.setVerboseOutputStream(diag_out);  // "N errors generated."
  ci.createFileManager(files);
  if (histd::cc_server::optimizes_itself(ci)) return histd::cc_server::compile_optimized(ci, object, diag_out);
  ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
  return clang::ExecuteCompilerInvocation(&ci);
}

// Everything before cc1 runs is the server's own business: a failure there
// (the arguments, the driver, the file system) is not the unit's, and
// histd answers it by spawning clang (CcStatus::ServerError). Only cc1's
// diagnostics are the unit's (CcStatus::Failed).
// `prelude`: the text of kPreludeHeader, when the arguments read it or the
// header precompiled from it.
Answer compile(const CcRequest& req, const Files& real, const std::string* prelude = nullptr) {
  Answer answer;
  answer.status = CcStatus::ServerError;
  llvm::raw_string_ostream diag_out(answer.payload);
  llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> files = files_with_source(req, real, prelude);
  if (!files) {
    answer.payload = "histd-cc: cannot resolve " + req.input + "\n";
    return answer;
  }
  // Driver: arguments -> the cc1 command, with driver diagnostics prefixed
  // like clang's ("clang: error: ...").
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> driver_opts(new clang::DiagnosticOptions);
  auto* driver_printer = new clang::TextDiagnosticPrinter(diag_out, driver_opts.get());
  driver_printer->setPrefix("clang");
  clang::DiagnosticsEngine driver_diags(new clang::DiagnosticIDs, driver_opts, driver_printer);
  clang::driver::Driver driver(kClangPath, llvm::sys::getDefaultTargetTriple(), driver_diags, "clang LLVM compiler",
                               files);
  std::vector<const char*> argv{kClangPath};
  for (const std::string& a : req.args) argv.push_back(a.c_str());
  std::unique_ptr<clang::driver::Compilation> compilation(driver.BuildCompilation(argv));
  if (!compilation || driver_diags.hasErrorOccurred()) {
    diag_out.flush();
    return answer;
  }
  std::vector<const char*> cc1_args;
  if (!cc1_arguments(*compilation, cc1_args)) {
    diag_out << "histd-cc: the arguments do not make one clang -cc1 job\n";
    diag_out.flush();
    return answer;
  }
  clang::CompilerInstance ci;
  ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_out, &ci.getDiagnosticOpts()), true);
  if (!clang::CompilerInvocation::CreateFromArgs(ci.getInvocation(), cc1_args, ci.getDiagnostics(), kClangPath)) {
    diag_out.flush();
    return answer;
  }
  answer.status = CcStatus::Failed;  // from here on, what goes wrong is the unit's
  llvm::SmallString<0> object;
  const bool ok = run_cc1(ci, files, object, diag_out);
  diag_out.flush();
  if (ok && !ci.getDiagnostics().hasErrorOccurred()) {
    answer.status = CcStatus::Object;
    answer.payload.assign(object.data(), object.size());
  }
  return answer;
}

// What of a request a precompiled prelude could serve: the include lines it
// opens with ("" when none) and its options (prelude_key).
struct PreludeFit {
  std::string lines;
  std::vector<std::string> key;
};

PreludeFit prelude_fit(const CcRequest& req) {
  PreludeFit fit{histd::cc_server::leading_includes(req.source), {}};
  if (!fit.lines.empty()) fit.key = histd::cc_server::prelude_key(req.args, req.input);
  return fit;
}

// Precompiles the request's leading lines with its options into `prelude`.
// Clang writes it straight into a file without a name (it finds none to
// write a temporary next to in /proc/self/fd).
bool build_prelude(const CcRequest& req, PreludeFit fit, Prelude& prelude, const Files& real) {
  prelude.forget();
  histd::Fd file = histd::cc_server::unnamed_file();
  if (!file) return false;
  const std::string pch = histd::cc_server::fd_path(file.get());
  const Answer a =
      compile({histd::cc_server::prelude_build_args(req.args, req.input, pch), kPreludeHeader, fit.lines}, real);
  if (a.status != CcStatus::Object) return false;
  prelude.keep(std::move(file), std::move(fit.key), std::move(fit.lines));
  return true;
}

// A unit that opens with the include lines precompiled in `prelude`, for
// the same options, is compiled reading them so. If clang refuses it then,
// it is compiled once more as sent, and that is the answer: a header changed
// since it was precompiled, or the unit has an error of its own.
Answer compile_with_prelude(const CcRequest& req, const PreludeFit& fit, Prelude& prelude, const Files& real,
                            const char*& how) {
  how = "";
  if (fit.lines.empty() || !prelude.serves(fit.key, fit.lines)) return compile(req, real);
  Answer a = compile({histd::cc_server::with_prelude(req.args, req.input, prelude.path()), req.input, req.source}, real,
                     &fit.lines);
  if (a.status == CcStatus::Object) {
    how = " (with the prelude)";
    return a;
  }
  prelude.forget();
  how = " (refused with the prelude)";
  return compile(req, real);
}

// After answering a request the prelude did not serve, builds it for the
// next one (which then waits for the build if it comes at once): no request
// pays for building it, and one that comes later finds it ready.
void prepare_prelude(const CcRequest& req, PreludeFit fit, const Answer& answered, Prelude& prelude, const Files& real,
                     bool timing) {
  if (fit.lines.empty() || answered.status != CcStatus::Object || prelude.serves(fit.key, fit.lines)) return;
  const bool built = build_prelude(req, std::move(fit), prelude, real);
  if (timing) std::fprintf(stderr, "histd-cc: prelude %s\n", built ? "built" : "not built");
}

// Compiles in a child; the child answers. False when the child died without
// finishing its answer (histd sees a broken stream, so the server ends).
bool serve_forked(int fd, const CcRequest& req, const Files& real) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const Answer a = compile(req, real);
    _exit(histd::runtime::cc::write_response(fd, a.status, a.payload) ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "histd-cc: compiling a unit died of signal %d\n", WTERMSIG(status));
    return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct Clock {
  double wall_ms;
  double cpu_ms;  // this process and its waited-for children
  long faults;    // minor page faults, the same
};

Clock now() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  struct rusage self {
  }, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  auto ms = [](const struct timeval& tv) { return tv.tv_sec * 1e3 + tv.tv_usec / 1e3; };
  return {ts.tv_sec * 1e3 + ts.tv_nsec / 1e6,
          ms(self.ru_utime) + ms(self.ru_stime) + ms(children.ru_utime) + ms(children.ru_stime),
          self.ru_minflt + children.ru_minflt};
}

void report(const Clock& start, bool forked, const char* how) {
  const Clock end = now();
  std::fprintf(stderr, "histd-cc: %s compile%s: %.1f ms wall, %.1f ms cpu, %ld minor faults\n",
               forked ? "forked" : "in-process", how, end.wall_ms - start.wall_ms, end.cpu_ms - start.cpu_ms,
               end.faults - start.faults);
}

// Waits for the next request; after `shed_after_ms` without one (-1: never)
// gives back its memory once, waits on, and has what it gave back read
// ahead when the request comes. False when the socket failed.
bool wait_for_request(int fd, int shed_after_ms, bool timing) {
  struct pollfd p {
    fd, POLLIN, 0
  };
  int rc = 0;
  while ((rc = poll(&p, 1, shed_after_ms)) < 0 && errno == EINTR) {
  }
  if (rc != 0) return rc > 0;
  const histd::cc_server::Shed shed = histd::cc_server::shed_memory();
  if (timing)
    std::fprintf(stderr, "histd-cc: idle: dropped %zu KiB of %zu file mappings\n", shed.bytes / 1024, shed.mappings);
  while ((rc = poll(&p, 1, -1)) < 0 && errno == EINTR) {
  }
  // A request: the pages it will most likely touch are asked for now, in
  // address order and large reads, so the compile finds them read or on
  // their way instead of reading one at a time as it faults on each page
  // the page cache let go. Asking takes 1-7 ms; a thread that asked beside
  // the compile was no faster (the compile outran it).
  if (rc > 0) histd::cc_server::read_ahead(shed.dropped);
  return rc > 0;
}

// What histd starts histd-cc with.
struct ServerOptions {
  int fd = 3;
  bool fork_each = false;
  bool timing = false;  // per request on stderr: wall and CPU milliseconds
  int shed_after_ms = -1;
};

// Reads the arguments into `opt`; the exit status when there is nothing to
// serve (--version, a usage error).
std::optional<int> parse_options(int argc, char** argv, ServerOptions& opt) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
      opt.fd = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--shed-after") == 0 && i + 1 < argc) {
      opt.shed_after_ms = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--fork") == 0) {
      opt.fork_each = true;
    } else if (std::strcmp(argv[i], "--timing") == 0) {
      opt.timing = true;
    } else if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("histd-cc %s\n", HISTD_CC_CLANG_VERSION);
      return 0;
    } else {
      std::fprintf(stderr,
                   "usage: histd-cc [--fd N] [--shed-after MS] [--fork] [--timing] [--version]\n"
                   "histd starts it; it is not meant to be run by hand.\n");
      return 2;
    }
  }
  return std::nullopt;
}

void start_compiler(const Files& real) {
  // Nothing is read relative to the working directory (the unit is in
  // memory, the include paths absolute), but the driver resolves the unit's
  // name against it: a directory deleted under histd made every compile
  // fail. / is always there.
  if (chdir("/") != 0) std::perror("histd-cc: chdir /");
  // As clang's cc1 does.
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  llvm::InitializeAllAsmParsers();

  // A first compile initializes what clang sets up lazily (option tables,
  // the BPF backend, DWARF and BTF emission) and faults its code in, here
  // rather than in the first unit histd sends; forked children inherit it.
  CcRequest warm{{"-O2", "-gdwarf-4", "-target", "bpf", "-mcpu=v3", "-c", "warm.c", "-o", "warm.o"},
                 "warm.c",
                 "struct s { int a; };\nint f(struct s *p) { return p ? p->a * 3 : 0; }\n"};
  compile(warm, real);
}

// Answers requests until histd closes the socket (or sends garbage), then
// exits.
[[noreturn]] void serve(const ServerOptions& opt, const Files& real) {
  // Forked children compile without it: what a child precompiled would
  // end with the child.
  Prelude prelude;
  CcRequest req;
  uint64_t compiles = 0;
  while (wait_for_request(opt.fd, opt.shed_after_ms, opt.timing) && histd::runtime::cc::read_request(opt.fd, req)) {
    const Clock start = now();
    req.source = histd::cc_server::with_distinct_core_names(req.source, ++compiles);
    if (opt.fork_each) {
      if (!serve_forked(opt.fd, req, real)) _exit(1);
      if (opt.timing) report(start, true, "");
      continue;
    }
    const char* how = "";
    PreludeFit fit = prelude_fit(req);
    const Answer a = compile_with_prelude(req, fit, prelude, real, how);
    if (!histd::runtime::cc::write_response(opt.fd, a.status, a.payload)) _exit(1);
    if (opt.timing) report(start, false, how);
    prepare_prelude(req, std::move(fit), a, prelude, real, opt.timing);
  }
  // Nothing left to do, and nothing worth destroying (a sanitized build
  // would report LLVM's intentionally leaked singletons at exit()).
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  ServerOptions opt;
  if (std::optional<int> status = parse_options(argc, argv, opt)) return *status;
  const Files real = histd::cc_server::caching_file_system();
  start_compiler(real);
  serve(opt, real);
}
