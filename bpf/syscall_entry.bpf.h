// SPDX-License-Identifier: GPL-2.0-only
/* The entries of a syscall event attached through the BTF-typed raw
 * sys_enter / sys_exit tracepoint (the dispatcher has checked the number):
 * they rebuild the record the classic syscall tracepoint would have handed
 * over, from the registers, in per-CPU scratch. x86_64's struct pt_regs is
 * user ABI (asm/ptrace.h); these are its byte offsets. The header's first 8
 * bytes stay zero: the classic path cannot read them either. Included by
 * hist_helpers.bpf.h: its HISTD_REG is probe_entry.bpf.h's too. */
#ifndef HISTD_SYSCALL_ENTRY_BPF_H
#define HISTD_SYSCALL_ENTRY_BPF_H

#define HISTD_REG_DI 112
#define HISTD_REG_SI 104
#define HISTD_REG_DX 96
#define HISTD_REG_R10 56
#define HISTD_REG_R8 72
#define HISTD_REG_R9 64
#define HISTD_REG_AX 80
#define HISTD_REG_ORIG_AX 120
#define HISTD_REG(regs, off) (*(const __u64 *)((const char *)(regs) + (off)))

#define HISTD_SYSCALL_ENTRY_BEGIN(needs_ts, needs_pid)                         \
  HISTD_SCRATCH_ENTRY_BEGIN(needs_ts, needs_pid);                              \
  __u64 *rec = (__u64 *)buf->data;                                             \
  const void *regs = (const void *)ctx[0];                                     \
  rec[0] = 0

/* Either's end: the triggers on the record, then the chain's next program. */
#define HISTD_SYSCALL_ENTRY_END(handler)                                       \
  handler(ctx, rec, &c);                                                       \
  HISTD_CHAIN_NEXT(ctx);                                                       \
  return 0

#define HISTD_SYSCALL_ENTER_ENTRY(handler, needs_ts, needs_pid, nargs)         \
  SEC("tp_btf/sys_enter")                                                      \
  int event_prog(__u64 *ctx) {                                                 \
    HISTD_SYSCALL_ENTRY_BEGIN(needs_ts, needs_pid);                            \
    rec[1] = (__u32)ctx[1];                                                    \
    if ((nargs) > 0)                                                           \
      rec[2] = HISTD_REG(regs, HISTD_REG_DI);                                  \
    if ((nargs) > 1)                                                           \
      rec[3] = HISTD_REG(regs, HISTD_REG_SI);                                  \
    if ((nargs) > 2)                                                           \
      rec[4] = HISTD_REG(regs, HISTD_REG_DX);                                  \
    if ((nargs) > 3)                                                           \
      rec[5] = HISTD_REG(regs, HISTD_REG_R10);                                 \
    if ((nargs) > 4)                                                           \
      rec[6] = HISTD_REG(regs, HISTD_REG_R8);                                  \
    if ((nargs) > 5)                                                           \
      rec[7] = HISTD_REG(regs, HISTD_REG_R9);                                  \
    HISTD_SYSCALL_ENTRY_END(handler);                                          \
  }

/* The exit record: the number from the dispatcher's check, the return value
 * from ax, as the classic path takes them (not the tracepoint's `ret`). */
#define HISTD_SYSCALL_EXIT_ENTRY(handler, needs_ts, needs_pid)                 \
  SEC("tp_btf/sys_exit")                                                       \
  int event_prog(__u64 *ctx) {                                                 \
    HISTD_SYSCALL_ENTRY_BEGIN(needs_ts, needs_pid);                            \
    rec[1] = (__u32)HISTD_REG(regs, HISTD_REG_ORIG_AX);                        \
    rec[2] = HISTD_REG(regs, HISTD_REG_AX);                                    \
    HISTD_SYSCALL_ENTRY_END(handler);                                          \
  }

#endif
