// SPDX-License-Identifier: GPL-2.0-only
/* Included by every generated unit after hist_helpers.bpf.h, with
 * HISTD_CHAINED defined first when the unit is part of a chain: the lines
 * before it are the same in every unit, so histd-cc precompiles them once. */
#ifndef HISTD_CHAIN_BPF_H
#define HISTD_CHAIN_BPF_H

/* A unit generated as part of its event's chain (HISTD_CHAINED) ends each
 * run by tail-calling the next slot of the dispatcher's program array; an
 * empty slot ends the chain. The slot is a constant the engine sets before
 * load (a read-only map the verifier folds), so the JIT makes the tail call
 * a direct jump, patched when the slot changes: no retpoline, a few ns. */
#ifdef HISTD_CHAINED
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, HISTD_CHAIN_SLOTS);
  __type(key, __u32);
  __type(value, __u32);
} histd_chain SEC(".maps");
const volatile __u32 histd_next_slot SEC(".rodata.chain") = 1;
#define HISTD_CHAIN_NEXT(ctx) bpf_tail_call(ctx, &histd_chain, histd_next_slot)
#else
#define HISTD_CHAIN_NEXT(ctx) ((void)(ctx))
#endif

/* The rest of an entry once its record `rec` is there (the tracepoint's, or
 * one the entry built): nothing of an event set_event_pid hides, then the
 * task and time the unit reads, its triggers, the chain's next program. */
#define HISTD_RUN_RECORD(handler, rec, needs_ts, needs_pid)                    \
  if (histd_pid_ignored(rec))                                                  \
    return 0;                                                                  \
  struct histd_common c = {.pid = histd_entry_pid(needs_pid)};                 \
  if (needs_ts)                                                                \
    c.ts = bpf_ktime_get_ns();                                                 \
  handler(ctx, rec, &c);                                                       \
  HISTD_CHAIN_NEXT(ctx);                                                       \
  return 0

#endif
