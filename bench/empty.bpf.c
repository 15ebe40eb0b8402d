// SPDX-License-Identifier: GPL-2.0-only
// The floor: a tracepoint program that does nothing.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tracepoint")
int empty(void *ctx) { return 0; }

// The raw floor: BTF-typed raw tracepoints on every system call's entry and
// exit that check the number is getppid's (110 on x86_64), as histd's raw
// dispatchers do, and do nothing else.
#define GETPPID 110

struct pt_regs___bench {
  unsigned long orig_ax;
} __attribute__((preserve_access_index));

SEC("tp_btf/sys_enter")
int empty_raw(__u64 *ctx) {
  if (ctx[1] != GETPPID)
    return 0;
  return 0;
}

SEC("tp_btf/sys_exit")
int empty_raw_exit(__u64 *ctx) {
  struct pt_regs___bench *regs = (void *)ctx[0];
  if (regs->orig_ax != GETPPID)
    return 0;
  return 0;
}

// The floor of the scheduler's tracepoints entered as BCC's runqlat enters
// them (bench/runqlat.sh's pipe_floor_btf): BTF-typed, nothing else.
SEC("tp_btf/sched_wakeup")
int empty_btf_wakeup(__u64 *ctx) { return 0; }

SEC("tp_btf/sched_wakeup_new")
int empty_btf_wakeup_new(__u64 *ctx) { return 0; }

SEC("tp_btf/sched_switch")
int empty_btf_switch(__u64 *ctx) { return 0; }

// The same, reading the clock once each, as every run-queue latency tool
// must on a wakeup and a switch (pipe_floor_btf_clock): what that read
// costs on this machine.
volatile __u64 histd_bench_clock;

SEC("tp_btf/sched_wakeup")
int clock_btf_wakeup(__u64 *ctx) {
  histd_bench_clock = bpf_ktime_get_ns();
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int clock_btf_wakeup_new(__u64 *ctx) {
  histd_bench_clock = bpf_ktime_get_ns();
  return 0;
}

SEC("tp_btf/sched_switch")
int clock_btf_switch(__u64 *ctx) {
  histd_bench_clock = bpf_ktime_get_ns();
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
