// SPDX-License-Identifier: GPL-2.0-only
// Hand-written equivalents of the traced variants, attached directly to the
// tracepoints (no dispatcher, no tail call): what a person would write with
// libbpf for the same table. histd's generated units additionally check the
// trigger's pause flag and count hits and drops in a per-CPU stats array;
// that is part of what the comparison measures, so none of it is here.
// Offsets are those of the syscalls:sys_enter_getppid format
// (__syscall_nr: offset 8, int).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "hand.bpf.h"

struct count_val {
  __u64 hits;
};
struct sum_val {
  __u64 hits;
  __u64 sum;
};

// The same map shape histd plans for keys=common_pid (per-CPU hash, u64 key,
// the kernel's default 2048 entries).
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, struct count_val);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, struct sum_val);
} sums SEC(".maps");

// A log2 histogram: 64 slots in a per-CPU array, the usual hand-written form
// (libbpf-tools) of what histd keeps in a per-CPU hash keyed by the slot.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u64);
} log2_slots SEC(".maps");

// Latency: entry timestamps by pid (shared, like histd's variable map), and
// per-pid count and sum of the deltas.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, __u64);
} starts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, struct sum_val);
} lats SEC(".maps");

static __always_inline __u64 current_pid(void) {
  return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline __u64 syscall_nr(const void *ctx) {
  return (__u64)(__s64) * (const __s32 *)((const char *)ctx + 8);
}

static __always_inline void count_current(void) {
  __u64 pid = current_pid();
  struct count_val zero = {};
  struct count_val *v = lookup_or_init(&counts, &pid, &zero);
  if (v)
    v->hits++;
}

SEC("tracepoint")
int hand_count(void *ctx) {
  count_current();
  return 0;
}

/* hand_count behind a comm prefix, as a careful hand writes it: the comm read
 * once and its first 11 bytes ("histd_bench", the bench loop's comm) compared
 * as two words. */
static const char kFilterPrefix[16] = "histd_bench";

SEC("tracepoint")
int hand_filter(void *ctx) {
  char comm[16];
  __u64 c0, c1, p0, p1;
  bpf_get_current_comm(comm, sizeof comm);
  __builtin_memcpy(&c0, comm, 8);
  __builtin_memcpy(&c1, comm + 8, 8);
  __builtin_memcpy(&p0, kFilterPrefix, 8);
  __builtin_memcpy(&p1, kFilterPrefix + 8, 8);
  if (c0 == p0 && !((c1 ^ p1) & 0xffffff))
    count_current();
  return 0;
}

SEC("tracepoint")
int hand_sum(void *ctx) {
  __u64 pid = current_pid();
  struct sum_val zero = {};
  struct sum_val *v = lookup_or_init(&sums, &pid, &zero);
  if (v) {
    v->hits++;
    v->sum += syscall_nr(ctx);
  }
  return 0;
}

SEC("tracepoint")
int hand_log2(void *ctx) {
  __u32 slot = log2_slot(syscall_nr(ctx));
  if (slot > 63)
    slot = 63;
  __u64 *n = bpf_map_lookup_elem(&log2_slots, &slot);
  if (n)
    (*n)++;
  return 0;
}

SEC("tracepoint")
int hand_lat_enter(void *ctx) {
  __u64 pid = current_pid();
  __u64 ts = bpf_ktime_get_ns();
  bpf_map_update_elem(&starts, &pid, &ts, BPF_ANY);
  return 0;
}

SEC("tracepoint")
int hand_lat_exit(void *ctx) {
  __u64 pid = current_pid();
  __u64 *start = bpf_map_lookup_elem(&starts, &pid);
  if (!start)
    return 0;
  __u64 delta = bpf_ktime_get_ns() - *start;
  bpf_map_delete_elem(&starts, &pid);
  struct sum_val zero = {};
  struct sum_val *v = lookup_or_init(&lats, &pid, &zero);
  if (v) {
    v->hits++;
    v->sum += delta;
  }
  return 0;
}

char LICENSE[] SEC("license") = "GPL";

// Per-CPU or shared (bench/shared.sh): a count by __syscall_nr, one key that
// every CPU updates, in a per-CPU hash (a plain add on the CPU's own copy)
// and in a shared hash (an atomic add on the one copy, whose cache line moves
// between CPUs that update it).
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, struct count_val);
} nr_percpu SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, struct count_val);
} nr_shared SEC(".maps");

SEC("tracepoint")
int hand_nr_percpu(void *ctx) {
  __u64 nr = syscall_nr(ctx);
  struct count_val zero = {};
  struct count_val *v = lookup_or_init(&nr_percpu, &nr, &zero);
  if (v)
    v->hits++;
  return 0;
}

SEC("tracepoint")
int hand_nr_shared(void *ctx) {
  __u64 nr = syscall_nr(ctx);
  struct count_val zero = {};
  struct count_val *v = lookup_or_init(&nr_shared, &nr, &zero);
  if (v)
    __sync_fetch_and_add(&v->hits, 1);
  return 0;
}

// Keys that never repeat (bench/fresh.sh): a count by sys_enter_close's fd
// (offset 16) in the per-CPU hash histd plans for keys=fd (2048 entries):
// full after 2048 new fds, then each call a lookup that misses and an
// insert that fails.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 2048);
  __type(key, __u64);
  __type(value, struct count_val);
} fds SEC(".maps");

SEC("tracepoint")
int hand_fd(void *ctx) {
  __u64 fd = *(const __u64 *)((const char *)ctx + 16);
  struct count_val zero = {};
  struct count_val *v = lookup_or_init(&fds, &fd, &zero);
  if (v)
    v->hits++;
  return 0;
}
