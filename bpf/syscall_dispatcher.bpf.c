// SPDX-License-Identifier: GPL-2.0-only
// The dispatchers of syscall events attached through the raw tracepoints
// (--raw-syscalls=true), and of tracepoints entered BTF-typed: like
// dispatcher.bpf.c, they tail-call slot 0 of the event's program array. A
// separate object, because its BTF-typed programs and CO-RE reads make
// libbpf parse the kernel's BTF at load: the classic dispatcher's load must
// not pay for that.
#include "dispatch_slots.bpf.h"

/* Attached to the BTF-typed raw sys_enter / sys_exit tracepoints
 * (docs/design/bpf.md, "Syscall events"), they run on every system call and go on only for the event's own number, set before load.
 * Like the classic syscall tracepoints, they pass over the 32-bit system
 * calls of a 64-bit task (int 0x80), whose numbers mean other calls. */
const volatile long histd_syscall_nr = -1;

struct thread_info___histd {
  __u32 status;
} __attribute__((preserve_access_index));
struct task_struct___histd {
  struct thread_info___histd thread_info;
} __attribute__((preserve_access_index));
struct pt_regs___histd {
  unsigned long orig_ax;
} __attribute__((preserve_access_index));

#define HISTD_TS_COMPAT 0x0002 /* arch/x86/include/asm/thread_info.h */

static __always_inline int in_compat_syscall(void) {
  struct task_struct___histd *task = (void *)bpf_get_current_task_btf();
  return task->thread_info.status & HISTD_TS_COMPAT;
}

SEC("tp_btf/sys_enter")
int dispatch_sys_enter(__u64 *ctx) {
  if ((long)ctx[1] != histd_syscall_nr || in_compat_syscall())
    return 0;
  bpf_tail_call(ctx, &slots, 0);
  return 0;
}

SEC("tp_btf/sys_exit")
int dispatch_sys_exit(__u64 *ctx) {
  struct pt_regs___histd *regs = (void *)ctx[0];
  if ((long)regs->orig_ax != histd_syscall_nr || in_compat_syscall())
    return 0;
  bpf_tail_call(ctx, &slots, 0);
  return 0;
}

/* The dispatcher of a tracepoint entered BTF-typed (pipeline::btf_entry):
 * which tracepoint is set before load (bpf_program__set_attach_target). */
SEC("tp_btf")
int dispatch_btf(__u64 *ctx) {
  bpf_tail_call(ctx, &slots, 0);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
