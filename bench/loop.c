// SPDX-License-Identifier: GPL-2.0-only
// The workload: N getppid() calls (or getpid() with a second argument
// "other": the cost of tracing getppid on the machine's other calls; or,
// with "spread", N calls of 16 cheap system calls in turn, SPREAD below:
// bench/many.sh's 16 events with a trigger each); prints nanoseconds per
// call.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

// The 16 calls of "spread", in the order they are made.
static const long SPREAD[16] = {SYS_getppid, SYS_getpid,  SYS_getuid,   SYS_getgid,      SYS_geteuid,
                                SYS_getegid, SYS_gettid,  SYS_getpgrp,  SYS_getsid,      SYS_getpgid,
                                SYS_times,   SYS_getpriority, SYS_sched_getscheduler, SYS_getcpu,
                                SYS_getresuid, SYS_getresgid};

static void spread(long n) {
  unsigned a[3];
  for (long i = 0; i < n; i++) {
    const long nr = SPREAD[i & 15];
    if (nr == SYS_getcpu || nr == SYS_getresuid || nr == SYS_getresgid)
      syscall(nr, &a[0], &a[1], nr == SYS_getcpu ? (void *)0 : &a[2]);
    else
      syscall(nr, 0, 0);
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  const long nr = argc > 2 && argv[2][0] == 'o' ? SYS_getpid : SYS_getppid;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (argc > 2 && argv[2][0] == 's')
    spread(n);
  else
    for (long i = 0; i < n; i++) syscall(nr);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  printf("%.2f\n", ns / n);
  return 0;
}
