// SPDX-License-Identifier: GPL-2.0-only
/* Another BPF program than histd's, for tests/bpf/missed_test.cpp. Its
 * bpf_printk() fires the tracepoint bpf_trace:bpf_trace_printk from inside
 * this program. Run from a perf event's overflow (`nested`, a CPU clock
 * sampling the test, in the timer interrupt) it holds the kernel's BPF
 * recursion guard (bpf_prog_active): the programs on bpf_trace_printk --
 * histd's dispatcher -- are skipped and counted in their recursion_misses.
 * (From a tracepoint program the nested event would not even reach the
 * guard: perf's own recursion protection drops it first, counted nowhere.)
 * Run by BPF_PROG_TEST_RUN (`direct`), no guard is held: histd's program
 * runs. `printed` counts the nested prints: the events histd must miss. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} printed SEC(".maps");

SEC("perf_event")
int nested(void *ctx) {
  __u32 zero = 0;
  __u64 *n = bpf_map_lookup_elem(&printed, &zero);
  if (n)
    __sync_fetch_and_add(n, 1);
  bpf_printk("histd missed test: nested");
  return 0;
}

SEC("raw_tp")
int direct(void *ctx) {
  bpf_printk("histd missed test: direct");
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
