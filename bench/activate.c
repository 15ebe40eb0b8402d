// SPDX-License-Identifier: GPL-2.0-only
// Activation latency, from the moment tracing is asked for.
//   histd_bench_activate histd TRIGGER HIST COMMAND
//     writes COMMAND ("{pid}" replaced by this process's pid) to TRIGGER,
//     then calls getppid() and reads HIST until its "Hits:" total is nonzero.
//     Prints: ms until the write returned, ms until a read showed the event.
//   histd_bench_activate bpftrace
//     starts bpftrace on sys_enter_getppid filtered on this process, and
//     calls getppid() until the probe reports the first one it saw.
//     Prints: ms until "Attaching" was printed, ms until the first event the
//     probe saw (its own timestamp: bpf_ktime_get_ns is CLOCK_MONOTONIC).
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ULL + (unsigned long long)t.tv_nsec;
}

static void replace_pid(const char *in, char *out, size_t size) {
  const char *at = strstr(in, "{pid}");
  if (!at) {
    snprintf(out, size, "%s", in);
    return;
  }
  snprintf(out, size, "%.*s%d%s", (int)(at - in), in, (int)getpid(), at + 5);
}

static long long hits(const char *path) {
  static char buf[1 << 16];
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -1;
  ssize_t len = 0, n;
  while (len < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
    len += n;
  close(fd);
  buf[len] = 0;
  const char *h = strstr(buf, "Hits: ");
  return h ? atoll(h + 6) : -1;
}

static int histd(const char *trigger, const char *hist, const char *command) {
  char text[4096];
  replace_pid(command, text, sizeof(text));
  size_t len = strlen(text);
  text[len++] = '\n';
  unsigned long long t0 = now_ns();
  int fd = open(trigger, O_WRONLY | O_APPEND);
  if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
    perror("writing the trigger");
    return 1;
  }
  close(fd);
  unsigned long long written = now_ns();
  for (int i = 0; i < 100000; i++) {
    syscall(SYS_getppid);
    if (hits(hist) > 0) {
      unsigned long long seen = now_ns();
      printf("%.3f %.3f\n", (written - t0) / 1e6, (seen - t0) / 1e6);
      return 0;
    }
  }
  fprintf(stderr, "the trigger never counted\n");
  return 1;
}

static int bpftrace(void) {
  char program[256];
  snprintf(program, sizeof(program),
           "tracepoint:syscalls:sys_enter_getppid /pid == %d/ { printf(\"live %%llu\\n\", nsecs); exit(); }",
           (int)getpid());
  int out[2];
  if (pipe2(out, O_CLOEXEC) < 0)
    return 1;
  unsigned long long t0 = now_ns();
  pid_t child = fork();
  if (child == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    execlp("bpftrace", "bpftrace", "-B", "line", "-e", program, (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  char buf[4096];
  size_t len = 0;
  unsigned long long attaching = 0, live = 0;
  int open_pipe = 1;
  while (open_pipe && !live && now_ns() - t0 < 30000000000ULL) {
    syscall(SYS_getppid);
    struct pollfd p = {.fd = out[0], .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
      continue;
    ssize_t n = read(out[0], buf + len, sizeof(buf) - 1 - len);
    if (n <= 0) {
      open_pipe = 0;
      break;
    }
    len += (size_t)n;
    buf[len] = 0;
    if (!attaching && strstr(buf, "Attaching"))
      attaching = now_ns();
    const char *l = strstr(buf, "live ");
    if (l && strchr(l, '\n'))
      live = strtoull(l + 5, NULL, 10);
    if (len > sizeof(buf) / 2) {  // keep the tail only: lines are short
      memmove(buf, buf + len - 256, 256);
      len = 256;
    }
  }
  kill(child, SIGINT);
  waitpid(child, NULL, 0);
  close(out[0]);
  if (!attaching || !live) {
    fprintf(stderr, "bpftrace never went live: %s\n", buf);
    return 1;
  }
  printf("%.3f %.3f\n", (attaching - t0) / 1e6, (live - t0) / 1e6);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "histd") == 0)
    return histd(argv[2], argv[3], argv[4]);
  if (argc == 2 && strcmp(argv[1], "bpftrace") == 0)
    return bpftrace();
  fprintf(stderr, "usage: %s histd TRIGGER HIST COMMAND | %s bpftrace\n", argv[0], argv[0]);
  return 2;
}
