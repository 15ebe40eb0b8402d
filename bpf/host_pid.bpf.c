// SPDX-License-Identifier: GPL-2.0-only
// A task's pid as the machine's first PID namespace numbers it (task->pid,
// what every BPF program and the kernel's own trace records see), for a
// task histd knows only by its pid in histd's namespace: a trace_marker
// writer, whom FUSE names in histd's namespace. The loader attaches this
// task iterator to that one task (link_info's tid, read in the caller's
// namespace) and reads the 4 bytes written here.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// The kernel's types, only the fields read (CO-RE: found by name in its BTF).
struct task_struct___histd {
  int pid;
} __attribute__((preserve_access_index));
struct seq_file;
struct bpf_iter_meta___histd {
  struct seq_file *seq;
} __attribute__((preserve_access_index));
struct bpf_iter__task___histd {
  struct bpf_iter_meta___histd *meta;
  struct task_struct___histd *task;
} __attribute__((preserve_access_index));

SEC("iter/task")
int host_pid(struct bpf_iter__task___histd *ctx) {
  struct task_struct___histd *task = ctx->task;
  if (!task) return 0;
  __u32 pid = task->pid;
  bpf_seq_write(ctx->meta->seq, &pid, sizeof(pid));
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
