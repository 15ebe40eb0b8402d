// Attaches bench/empty.bpf.o to a tracepoint, runs a command, detaches:
// the empty-program floor every traced variant is compared with.
//   histd_bench_floor OBJECT SYSTEM EVENT -- COMMAND...
#include <bpf/libbpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s OBJECT SYSTEM EVENT -- COMMAND...\n", argv[0]);
    return 2;
  }
  bpf_object* obj = bpf_object__open_file(argv[1], nullptr);
  if (!obj || bpf_object__load(obj)) {
    std::perror("loading the empty program");
    return 1;
  }
  bpf_link* link = bpf_program__attach_tracepoint(bpf_object__find_program_by_name(obj, "empty"), argv[2], argv[3]);
  if (!link) {
    std::perror("attaching");
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[5], argv + 5);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  bpf_link__destroy(link);
  bpf_object__close(obj);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
