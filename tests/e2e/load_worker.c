// SPDX-License-Identifier: GPL-2.0-only
// The load test's workload: one process calling getppid() in a tight loop,
// counting every call it makes.
//
//   histd_load_worker SECONDS < GO
//
// Waits until its stdin yields a byte or end of file (a fifo the test opens
// when every trigger is in place), then calls getppid() for SECONDS and
// prints "<calls> <nanoseconds>". Nothing else it does enters getppid, so the
// count is exactly the number of sys_enter_getppid and sys_exit_getppid
// events this pid produced. The clock is read through the vDSO every 1024
// calls: no syscall, and not often enough to slow the loop.
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 2 || atof(argv[1]) <= 0) {
    fprintf(stderr, "usage: %s SECONDS < GO\n", argv[0]);
    return 2;
  }
  const long long duration = (long long)(atof(argv[1]) * 1e9);
  char go;
  if (read(STDIN_FILENO, &go, 1) < 0) {
    perror("reading the go signal");
    return 1;
  }
  unsigned long long calls = 0;
  const long long start = now_ns();
  long long elapsed = 0;
  while (elapsed < duration) {
    for (int i = 0; i < 1024; i++) syscall(SYS_getppid);
    calls += 1024;
    elapsed = now_ns() - start;
  }
  printf("%llu %lld\n", calls, elapsed);
  return 0;
}
