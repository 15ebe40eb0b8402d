// SPDX-License-Identifier: GPL-2.0-only
// The workload of the big-table read: close() on N distinct invalid fds, so
// that sys_enter_close sees N distinct fd values from one pid. Prints its pid
// and waits for a line on stdin first, so that a filter on it can be set up.
// BASE (default 1<<24) is the first fd: two tests that key on the fd value
// and run at once (ctest -j2) each take their own range. With "time", it
// neither prints its pid nor waits, and prints ns per call (bench/fresh.sh).
//   histd_bench_close N [BASE [time]]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  const int timed = argc > 3 && strcmp(argv[3], "time") == 0;
  if (!timed) {
    printf("%d\n", (int)getpid());
    fflush(stdout);
    char go[2];
    if (!fgets(go, sizeof(go), stdin))
      return 1;
  }
  // Far above any fd this process has open: every call fails with EBADF.
  const long base = argc > 2 ? atol(argv[2]) : 1 << 24;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++)
    syscall(SYS_close, base + i);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (timed)
    printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  return 0;
}
