// SPDX-License-Identifier: GPL-2.0-only
/* The entry of a kernel tracepoint entered BTF-typed (tp_btf): its program
 * is handed the tracepoint's arguments (typed task pointers), not a record,
 * and builds the record the classic tracepoint would have written, in
 * per-CPU scratch, as the tracepoint's TP_fast_assign does
 * (include/trace/events/sched.h). The classic entry pays for the kernel
 * filling a record in a perf buffer on every event; this one reads what
 * its fields are made of (lib/pipeline/btf_events.cpp lists the events and
 * what each field is built from). */
#ifndef HISTD_BTF_ENTRY_BPF_H
#define HISTD_BTF_ENTRY_BPF_H

/* CO-RE: libbpf finds these members in the running kernel's BTF. */
struct thread_info___histd_btf {
  __u32 cpu;
} __attribute__((preserve_access_index));
struct task_struct___histd_btf {
  struct thread_info___histd_btf thread_info;
  int prio;
  int exit_state;
  int pid;
  char comm[16];
} __attribute__((preserve_access_index));

#define HISTD_BTF_TASK(ctx, arg) ((const struct task_struct___histd_btf *)(ctx)[arg])

/* A task's comm, 16 bytes as the record holds it: two 8-byte loads (the
 * kernel aligns comm to 8 in struct task_struct; a byte-wise copy was 32
 * instructions a comm). The record's comm fields are 8-aligned too. */
static __always_inline void histd_btf_comm(void *dst, const struct task_struct___histd_btf *task) {
  const __u64 *comm = (const __u64 *)task->comm;
  ((__u64 *)dst)[0] = comm[0];
  ((__u64 *)dst)[1] = comm[1];
}

/* sched_switch's prev_state: __trace_sched_switch_state(preempt, prev_state,
 * prev) with the task states of the kernel's format file, whose print fmt
 * the event's table row checks (TASK_REPORT 0x7f, TASK_REPORT_IDLE 0x80,
 * TASK_REPORT_MAX 0x100). Arguments: preempt, prev, next, prev_state. */
static __always_inline long histd_btf_switch_state(const __u64 *ctx) {
  if ((__u8)ctx[0])
    return 0x100;
  const __u32 prev_state = (__u32)ctx[3];
  __u32 state = (prev_state | (__u32)HISTD_BTF_TASK(ctx, 1)->exit_state) & 0x7f;
  if ((prev_state & 0x402) == 0x402) /* TASK_IDLE */
    state = 0x80;
  if (prev_state & (0x1000 | 0x8000)) /* TASK_RTLOCK_WAIT, TASK_FROZEN */
    state = 0x2;
  /* state ? 1 << (fls(state) - 1) : 0, the highest bit set */
  state |= state >> 1;
  state |= state >> 2;
  state |= state >> 4;
  return state - (state >> 1);
}

#define HISTD_BTF_ENTRY_BEGIN(needs_ts, needs_pid)                             \
  __u32 zero = 0;                                                              \
  struct histd_record_buf *buf = bpf_map_lookup_elem(&histd_scratch, &zero);   \
  if (!buf)                                                                    \
    return 0;                                                                  \
  __u8 *rec = buf->data;                                                       \
  *(__u64 *)rec = 0

#define HISTD_BTF_ENTRY_END(handler, needs_ts, needs_pid)                      \
  HISTD_RUN_RECORD(handler, rec, needs_ts, needs_pid)

#endif
