// SPDX-License-Identifier: GPL-2.0-only
// Runs a command under a seccomp filter that fails the named system calls
// with EPERM, as a container's default filter does (systemd-nspawn's for
// bpf() and perf_event_open(), podman's):
//   histd_test_seccomp SYSCALL[,SYSCALL...] COMMAND [ARG...]
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SYSCALL[,SYSCALL...] COMMAND [ARG...]\n", argv[0]);
    return 2;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return 1;
  char names[256];
  snprintf(names, sizeof names, "%s", argv[1]);
  for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0) {
      fprintf(stderr, "%s: no such system call\n", name);
      return 1;
    }
  }
  if (seccomp_load(ctx) != 0) {
    perror("seccomp_load");
    return 1;
  }
  execvp(argv[2], argv + 2);
  perror(argv[2]);
  return 127;
}
