// SPDX-License-Identifier: GPL-2.0-only
// Loads a BPF object, attaches named programs of it to named tracepoints,
// runs a command, detaches: the empty-program floor and the hand-written
// equivalents every traced variant is compared with.
//   histd_bench_attach OBJECT PROGRAM:SYSTEM:EVENT... -- COMMAND...
// One program may be attached to several tracepoints.
#include <bpf/libbpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Attachment {
  std::string program, system, event;
};

bool parse(const char* arg, Attachment& a) {
  const std::string s = arg;
  const auto first = s.find(':');
  const auto second = first == std::string::npos ? first : s.find(':', first + 1);
  if (second == std::string::npos) return false;
  a = {s.substr(0, first), s.substr(first + 1, second - first - 1), s.substr(second + 1)};
  return !a.program.empty() && !a.system.empty() && !a.event.empty();
}

int usage(const char* self) {
  std::fprintf(stderr, "usage: %s OBJECT PROGRAM:SYSTEM:EVENT... -- COMMAND...\n", self);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return usage(argv[0]);
  std::vector<Attachment> wanted;
  int i = 2;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; i++) {
    Attachment a;
    if (!parse(argv[i], a)) return usage(argv[0]);
    wanted.push_back(a);
  }
  if (wanted.empty() || i + 1 >= argc) return usage(argv[0]);
  char** command = argv + i + 1;

  bpf_object* obj = bpf_object__open_file(argv[1], nullptr);
  if (!obj) {
    std::fprintf(stderr, "opening %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  // Load only the programs that are attached: the verifier's work and the
  // object's maps stay the same whichever variant runs.
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    bool used = false;
    for (const auto& a : wanted) used = used || a.program == bpf_program__name(prog);
    bpf_program__set_autoload(prog, used);
  }
  if (int err = bpf_object__load(obj)) {
    std::fprintf(stderr, "loading %s: %s\n", argv[1], std::strerror(-err));
    bpf_object__close(obj);
    return 1;
  }
  std::vector<bpf_link*> links;
  int rc = 0;
  for (const auto& a : wanted) {
    bpf_program* p = bpf_object__find_program_by_name(obj, a.program.c_str());
    // "raw" stands for the BTF-typed raw tracepoint the program's section names.
    bpf_link* link = !p                  ? nullptr
                     : a.system == "raw" ? bpf_program__attach(p)
                                         : bpf_program__attach_tracepoint(p, a.system.c_str(), a.event.c_str());
    if (!link) {
      std::fprintf(stderr, "attaching %s to %s:%s: %s\n", a.program.c_str(), a.system.c_str(), a.event.c_str(),
                   p ? std::strerror(errno) : "no such program");
      rc = 1;
      break;
    }
    links.push_back(link);
  }
  if (rc == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      execvp(command[0], command);
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
      rc = 1;
    else
      rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  for (bpf_link* link : links) bpf_link__destroy(link);
  bpf_object__close(obj);
  return rc;
}
