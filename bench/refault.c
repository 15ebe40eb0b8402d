// SPDX-License-Identifier: GPL-2.0-only
// What a page costs the first time it is touched after it was unmapped: the
// floor under histd-cc's idle shed. The shed unmaps its
// libraries' pages (MADV_DONTNEED); the compile after it touches them again.
//   histd_bench_refault FILE [MIB [ROUNDS]]
//     maps MIB MiB (default 64) of FILE (one of histd-cc's libraries) private
//     and read-only, as the loader does, reads it once (into the page cache),
//     then in ROUNDS rounds (default 9), the ways in a different order each
//     round, times reading one byte of every page:
//       mapped    the pages still mapped (what a warm histd-cc pays)
//       faulted   after MADV_DONTNEED: page faults, the kernel mapping up to
//                 16 neighbours at each (fault-around)
//       populated after MADV_DONTNEED and one MADV_POPULATE_READ of the whole
//                 range, which maps every page ahead: the read alone
//     and the MADV_POPULATE_READ itself. Prints each one's median (min..max)
//     in ns per 4 KiB page.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older headers lack it
#endif

enum { kMapped, kFaulted, kPopulated, kPopulate, kWays };
static const char *const kNames[kWays] = {"mapped", "faulted", "populated", "MADV_POPULATE_READ"};
enum { kPage = 4096, kMaxRounds = 99 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

// The reads' sum goes here, so that the compiler keeps every read.
static volatile unsigned long sink;

static unsigned long read_pages(const volatile unsigned char *p, size_t len) {
  unsigned long sum = 0;
  for (size_t at = 0; at < len; at += kPage) sum += p[at];
  return sum;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// One round of way `way` (kPopulated also fills kPopulate): ns per page.
static unsigned long one_round(int way, unsigned char *p, size_t len, double *out) {
  const double pages = (double)(len / kPage);
  if (way != kMapped) madvise(p, len, MADV_DONTNEED);
  double t = now_ns();
  if (way == kPopulated) {
    if (madvise(p, len, MADV_POPULATE_READ) != 0) perror("MADV_POPULATE_READ");
    const double populated = now_ns();
    out[kPopulate] = (populated - t) / pages;
    t = populated;
  }
  const unsigned long sum = read_pages(p, len);
  out[way] = (now_ns() - t) / pages;
  return sum;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: histd_bench_refault FILE [MIB [ROUNDS]]\n");
    return 2;
  }
  const size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
  int rounds = argc > 3 ? atoi(argv[3]) : 9;
  if (rounds < 1 || rounds > kMaxRounds) rounds = 9;
  const int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }
  size_t len = mib << 20;
  if ((off_t)len > st.st_size) len = (size_t)st.st_size & ~(size_t)(kPage - 1);
  unsigned char *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  unsigned long sum = read_pages(p, len);
  static double figures[kWays][kMaxRounds];
  for (int r = 0; r < rounds; ++r) {
    int order[3] = {kMapped, kFaulted, kPopulated};
    for (int i = 2; i > 0; --i) {  // a Fisher-Yates shuffle
      const int j = rand() % (i + 1), tmp = order[i];
      order[i] = order[j];
      order[j] = tmp;
    }
    double out[kWays];
    for (int i = 0; i < 3; ++i) sum += one_round(order[i], p, len, out);
    for (int w = 0; w < kWays; ++w) figures[w][r] = out[w];
  }
  printf("ns per 4 KiB page, %zu MiB of %s, %d rounds\n", len >> 20, argv[1], rounds);
  for (int w = 0; w < kWays; ++w) {
    qsort(figures[w], (size_t)rounds, sizeof(double), by_value);
    printf("  %-19s %7.0f (%.0f..%.0f)\n", kNames[w], figures[w][rounds / 2], figures[w][0], figures[w][rounds - 1]);
  }
  sink = sum;
  return 0;
}
