// SPDX-License-Identifier: GPL-2.0-only
// What a BPF program sees of the timer wakeups of a task named "cyclictest"
// (bench/lost_wakeups.sh): counted through the classic tracepoint (perf's
// tracepoint path, as histd's programs and bpftrace's run) and through the
// BTF-typed raw tracepoint (called from the tracepoint itself, without
// perf's recursion guard); and every sched_waking whose current task has the
// name given in `current_comm`, whatever it wakes.
#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

struct task_struct___bench {
  char comm[16];
} __attribute__((preserve_access_index));

enum { CLASSIC, RAW, RAW_BY_CURRENT, N_COUNTS };

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, N_COUNTS);
  __type(key, __u32);
  __type(value, __u64);
} counts SEC(".maps");

// The current task's name to count wakeups under (RAW_BY_CURRENT), written
// by the loader.
struct comm {
  char name[16];
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct comm);
} current_comm SEC(".maps");

static __always_inline int same(const char *a, const char *b) {
  for (int i = 0; i < 16; i++) {
    if (a[i] != b[i]) return 0;
    if (!a[i]) return 1;
  }
  return 1;
}

static __always_inline void count(__u32 k) {
  __u64 *v = bpf_map_lookup_elem(&counts, &k);
  if (v) __sync_fetch_and_add(v, 1);
}

static const char kWorkload[16] = "cyclictest";

SEC("tracepoint/sched/sched_waking")
int classic(void *ctx) {
  char comm[16];
  bpf_probe_read_kernel(comm, sizeof comm, (char *)ctx + 8);  // the record's comm: the woken task's
  if (same(comm, kWorkload)) count(CLASSIC);
  return 0;
}

SEC("tp_btf/sched_waking")
int raw(__u64 *ctx) {
  struct task_struct___bench *p = (void *)ctx[0];
  char comm[16];
  BPF_CORE_READ_STR_INTO(&comm, p, comm);
  if (same(comm, kWorkload)) count(RAW);
  char cur[16];
  bpf_get_current_comm(cur, sizeof cur);
  __u32 zero = 0;
  const struct comm *wanted = bpf_map_lookup_elem(&current_comm, &zero);
  if (wanted && same(cur, wanted->name)) count(RAW_BY_CURRENT);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
