// SPDX-License-Identifier: GPL-2.0-only
// Run-queue latency in the kernel's form, written by hand: the least a tool
// can do that keeps what the kernel's hist triggers keep (bench/runqlat.sh's
// pipe_form_hash and pipe_form_task). The form (seed 003, as the bench gives
// it to histd): a timestamp variable per wakeup, per new task's wakeup and
// per preempted switch, each in its trigger's table of hit counts by pid;
// on a switch, three triggers keyed by next_pid, each reading one of them
// once and, when it is set, counting in its own table and sending the
// latency to a synthetic event whose `.log2` table counts it.
//   form_hash_*: every variable in its trigger's table (one hash shared by
//                the CPUs), as the kernel keeps it and histd does.
//   form_task_*: the variables in task-local storage instead (the task the
//                pid names), the tables per-CPU hashes of hit counts.
//   form_min_*:  as form_task, but the three variables in one task-local
//                storage: one lookup a switch where form_task makes three.
//   form_lean_*: as form_min, and the six tables' hit counts by pid kept in
//                that storage too, folded into per-CPU hashes by pid when
//                the task exits (form_lean_exit) and by a reader walking
//                the tasks: no hash on the hot path at all, only the task's
//                storage and the .log2 array (the least a program keeping
//                the kernel's tables can do).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "hand.bpf.h"

struct task_struct {
  int pid;
} __attribute__((preserve_access_index));

struct hit {
  __u64 hits;
};
struct with_var {
  __u64 hits;
  __u64 ts;
  __u64 set;
};
struct var {
  __u64 ts;
  __u64 set;
};

#define HASH_OF(name, val_t, kind)  \
  struct {                          \
    __uint(type, kind);             \
    __uint(max_entries, 10240);     \
    __type(key, __u32);             \
    __type(value, val_t);           \
  } name SEC(".maps")

HASH_OF(hash_tw, struct with_var, BPF_MAP_TYPE_HASH);
HASH_OF(hash_tn, struct with_var, BPF_MAP_TYPE_HASH);
HASH_OF(hash_tp, struct with_var, BPF_MAP_TYPE_HASH);
HASH_OF(hash_lw, struct hit, BPF_MAP_TYPE_HASH);
HASH_OF(hash_ln, struct hit, BPF_MAP_TYPE_HASH);
HASH_OF(hash_lp, struct hit, BPF_MAP_TYPE_HASH);
HASH_OF(pcpu_tw, struct hit, BPF_MAP_TYPE_PERCPU_HASH);
HASH_OF(pcpu_tn, struct hit, BPF_MAP_TYPE_PERCPU_HASH);
HASH_OF(pcpu_tp, struct hit, BPF_MAP_TYPE_PERCPU_HASH);
HASH_OF(pcpu_lw, struct hit, BPF_MAP_TYPE_PERCPU_HASH);
HASH_OF(pcpu_ln, struct hit, BPF_MAP_TYPE_PERCPU_HASH);
HASH_OF(pcpu_lp, struct hit, BPF_MAP_TYPE_PERCPU_HASH);

#define TASK_VAR(name)                          \
  struct {                                      \
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);    \
    __uint(map_flags, BPF_F_NO_PREALLOC);       \
    __type(key, int);                           \
    __type(value, struct var);                  \
  } name SEC(".maps")

TASK_VAR(task_tw);
TASK_VAR(task_tn);
TASK_VAR(task_tp);

// The synthetic event's `hist:keys=lat.log2` table.
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 65);
  __type(key, __u32);
  __type(value, __u64);
} log2_lat SEC(".maps");

static __always_inline void count(void *table, __u32 pid) {
  struct hit zero = {};
  struct hit *h = lookup_or_init(table, &pid, &zero);
  if (h)
    h->hits++;
}

static __always_inline void synth_latency(__u64 lat) {
  __u32 bucket = log2_slot(lat);
  __u64 *n = bpf_map_lookup_elem(&log2_lat, &bucket);
  if (n)
    (*n)++;
}

// ---- every variable in its trigger's table ----

static __always_inline void hash_set(void *table, __u32 pid, __u64 now) {
  struct with_var init = {};
  struct with_var *v = lookup_or_init(table, &pid, &init);
  if (!v)
    return;
  v->hits++;
  v->ts = now;
  v->set = 1;
}

static __always_inline void hash_match(void *vars, void *table, __u32 pid, __u64 now) {
  struct with_var *v = bpf_map_lookup_elem(vars, &pid);
  if (!v || !v->set)
    return;
  v->set = 0;
  count(table, pid);
  synth_latency(now - v->ts);
}

SEC("tp_btf/sched_wakeup")
int form_hash_wakeup(__u64 *ctx) {
  hash_set(&hash_tw, ((struct task_struct *)ctx[0])->pid, bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int form_hash_wakeup_new(__u64 *ctx) {
  hash_set(&hash_tn, ((struct task_struct *)ctx[0])->pid, bpf_ktime_get_ns());
  return 0;
}

// sched_switch(preempt, prev, next, prev_state): the record's prev_state
// is 0 for a task switched out running and not preempted.
SEC("tp_btf/sched_switch")
int form_hash_switch(__u64 *ctx) {
  const __u64 now = bpf_ktime_get_ns();
  struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
  if (!ctx[0] && (__u32)ctx[3] == 0)
    hash_set(&hash_tp, prev->pid, now);
  const __u32 pid = next->pid;
  hash_match(&hash_tw, &hash_lw, pid, now);
  hash_match(&hash_tn, &hash_ln, pid, now);
  hash_match(&hash_tp, &hash_lp, pid, now);
  return 0;
}

// ---- the variables where the task is ----

static __always_inline void task_set(void *vars, void *table, struct task_struct *t, __u64 now) {
  count(table, t->pid);
  struct var *v = bpf_task_storage_get(vars, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!v)
    return;
  v->ts = now;
  v->set = 1;
}

static __always_inline void task_match(void *vars, void *table, struct task_struct *t, __u64 now) {
  struct var *v = bpf_task_storage_get(vars, t, 0, 0);
  if (!v || !v->set)
    return;
  v->set = 0;
  count(table, t->pid);
  synth_latency(now - v->ts);
}

SEC("tp_btf/sched_wakeup")
int form_task_wakeup(__u64 *ctx) {
  task_set(&task_tw, &pcpu_tw, (void *)ctx[0], bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int form_task_wakeup_new(__u64 *ctx) {
  task_set(&task_tn, &pcpu_tn, (void *)ctx[0], bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_switch")
int form_task_switch(__u64 *ctx) {
  const __u64 now = bpf_ktime_get_ns();
  struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
  if (!ctx[0] && (__u32)ctx[3] == 0)
    task_set(&task_tp, &pcpu_tp, prev, now);
  task_match(&task_tw, &pcpu_lw, next, now);
  task_match(&task_tn, &pcpu_ln, next, now);
  task_match(&task_tp, &pcpu_lp, next, now);
  return 0;
}

// ---- the three variables in one place where the task is ----

struct vars3 {
  __u64 ts[3];
  __u64 set; /* bit i: ts[i] holds a value not yet read */
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct vars3);
} task_vars SEC(".maps");

static __always_inline void min_set(int i, void *table, struct task_struct *t, __u64 now) {
  count(table, t->pid);
  struct vars3 *v = bpf_task_storage_get(&task_vars, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!v)
    return;
  v->ts[i & 3] = now;
  v->set |= 1ull << i;
}

static __always_inline void min_match(struct vars3 *v, int i, void *table, __u32 pid, __u64 now) {
  if (!(v->set & (1ull << i)))
    return;
  v->set &= ~(1ull << i);
  count(table, pid);
  synth_latency(now - v->ts[i & 3]);
}

SEC("tp_btf/sched_wakeup")
int form_min_wakeup(__u64 *ctx) {
  min_set(0, &pcpu_tw, (void *)ctx[0], bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int form_min_wakeup_new(__u64 *ctx) {
  min_set(1, &pcpu_tn, (void *)ctx[0], bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_switch")
int form_min_switch(__u64 *ctx) {
  const __u64 now = bpf_ktime_get_ns();
  struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
  if (!ctx[0] && (__u32)ctx[3] == 0)
    min_set(2, &pcpu_tp, prev, now);
  struct vars3 *v = bpf_task_storage_get(&task_vars, next, 0, 0);
  if (!v || !v->set)
    return 0;
  const __u32 pid = next->pid;
  min_match(v, 0, &pcpu_lw, pid, now);
  min_match(v, 1, &pcpu_ln, pid, now);
  min_match(v, 2, &pcpu_lp, pid, now);
  return 0;
}

// ---- the counts where the task is too ----

struct lean {
  __u64 ts[3];
  __u64 set;     /* bit i: ts[i] holds a value not yet read */
  __u64 hits[6]; /* the wakeup tables' counts, then the switch tables' */
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct lean);
} task_lean SEC(".maps");

static __always_inline void lean_set(int i, struct task_struct *t, __u64 now) {
  struct lean *v = bpf_task_storage_get(&task_lean, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!v)
    return;
  v->hits[i & 3]++;
  v->ts[i & 3] = now;
  v->set |= 1ull << i;
}

static __always_inline void lean_match(struct lean *v, int i, __u64 now) {
  if (!(v->set & (1ull << i)))
    return;
  v->set &= ~(1ull << i);
  v->hits[3 + (i & 3)]++;
  synth_latency(now - v->ts[i & 3]);
}

SEC("tp_btf/sched_wakeup")
int form_lean_wakeup(__u64 *ctx) {
  lean_set(0, (void *)ctx[0], bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int form_lean_wakeup_new(__u64 *ctx) {
  lean_set(1, (void *)ctx[0], bpf_ktime_get_ns());
  return 0;
}

SEC("tp_btf/sched_switch")
int form_lean_switch(__u64 *ctx) {
  const __u64 now = bpf_ktime_get_ns();
  struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
  if (!ctx[0] && (__u32)ctx[3] == 0)
    lean_set(2, prev, now);
  struct lean *v = bpf_task_storage_get(&task_lean, next, 0, 0);
  if (!v || !v->set)
    return 0;
  lean_match(v, 0, now);
  lean_match(v, 1, now);
  lean_match(v, 2, now);
  return 0;
}

static __always_inline void fold(void *table, __u32 pid, __u64 hits) {
  if (!hits)
    return;
  struct hit zero = {};
  struct hit *h = lookup_or_init(table, &pid, &zero);
  if (h)
    h->hits += hits;
}

// The task's counts outlive it, as the kernel's tables keep a pid's entry.
SEC("tp_btf/sched_process_exit")
int form_lean_exit(__u64 *ctx) {
  struct task_struct *t = (void *)ctx[0];
  struct lean *v = bpf_task_storage_get(&task_lean, t, 0, 0);
  if (!v)
    return 0;
  const __u32 pid = t->pid;
  fold(&pcpu_tw, pid, v->hits[0]);
  fold(&pcpu_tn, pid, v->hits[1]);
  fold(&pcpu_tp, pid, v->hits[2]);
  fold(&pcpu_lw, pid, v->hits[3]);
  fold(&pcpu_ln, pid, v->hits[4]);
  fold(&pcpu_lp, pid, v->hits[5]);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
