// SPDX-License-Identifier: GPL-2.0-only
/* A program for the uprobe tests (test_probe_events.sh): it calls
 * histd_probe_target(i % 3, "even"/"odd") for i below its argument, so that
 * a probe on that function sees known arguments and return values. The
 * strings' page is read by the program before any probe reads it (a BPF
 * program cannot fault a page in; the kernel's uprobe can). */
#include <stdlib.h>

__attribute__((noinline, noipa)) long histd_probe_target(long n, const char *s) {
  return n * 2 + (s[0] == '\0');
}

int main(int argc, char **argv) {
  const long count = argc > 1 ? atol(argv[1]) : 1;
  const char* volatile strings[] = {"even", "odd"};
  long sum = strings[0][0] + strings[1][0];
  for (long i = 0; i < count; ++i) sum += histd_probe_target(i % 3, i % 2 ? "odd" : "even");
  return sum < 0;
}
