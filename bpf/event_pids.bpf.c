// SPDX-License-Identifier: GPL-2.0-only
// options/event-fork: while it is set, a listed task's new tasks join
// set_event_pid's pids and a task leaves them when it is freed, as the
// kernel's fork and exit probes of the pid filter do (registered on
// sched_process_fork and sched_process_free). BTF-typed raw tracepoints:
// unlike a classic tracepoint's program, one is not skipped while another
// BPF program runs on its CPU, so no fork goes unfollowed for that. The
// map is the tree's histd_pids (its fd reused at load).
#include "event_pids.bpf.h"

struct task_struct___histd {
  int pid;
} __attribute__((preserve_access_index));

/* A task made by a listed one (a process or a thread) is listed. */
SEC("tp_btf/sched_process_fork")
int follow_fork(__u64 *ctx) {
  struct task_struct___histd *parent = (void *)ctx[0];
  struct task_struct___histd *child = (void *)ctx[1];
  if (!histd_pid_listed(parent->pid))
    return 0;
  __u32 pid = child->pid;
  __u8 one = 1;
  bpf_map_update_elem(&histd_pids, &pid, &one, BPF_ANY);
  return 0;
}

/* A freed task's pid may soon name another task: it is no longer listed. */
SEC("tp_btf/sched_process_free")
int follow_free(__u64 *ctx) {
  struct task_struct___histd *task = (void *)ctx[0];
  __u32 pid = task->pid;
  bpf_map_delete_elem(&histd_pids, &pid);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
