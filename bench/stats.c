// SPDX-License-Identifier: GPL-2.0-only
// Turns on the kernel's BPF run-time statistics (run_time_ns, run_cnt per
// program) for as long as it runs: BPF_ENABLE_STATS returns an fd that keeps
// them on until it is closed, so nothing is left behind if the bench dies and
// the kernel.bpf_stats_enabled sysctl (someone else's setting) is untouched.
//   histd_bench_stats    (prints "on", then waits for SIGTERM or SIGINT)
#include <bpf/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; }

int main(void) {
  int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) {
    fprintf(stderr, "BPF_ENABLE_STATS: %s\n", strerror(-fd));
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf("on\n");
  fflush(stdout);
  pause();
  close(fd);
  return 0;
}
