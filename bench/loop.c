// The workload: N getppid() calls (or getpid() with a second argument
// "other": the cost of tracing getppid on the machine's other calls);
// prints nanoseconds per call.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  const long nr = argc > 2 && argv[2][0] == 'o' ? SYS_getpid : SYS_getppid;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) syscall(nr);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  printf("%.2f\n", ns / n);
  return 0;
}
