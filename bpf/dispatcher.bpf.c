// SPDX-License-Identifier: GPL-2.0-only
// The fixed program attached to a tracepoint: it tail-calls slot 0 of the
// event's program array, where the engine installs the event program. Swapping
// that slot replaces every trigger of the event at once (ARCHITECTURE decision 2).
#include "dispatch_slots.bpf.h"

SEC("tracepoint")
int dispatch(void *ctx) {
  bpf_tail_call(ctx, &slots, 0);
  return 0;
}

/* The same for a kprobe or uprobe event: the kernel runs only kprobe-type
 * programs there, and a program array holds programs of one type. */
SEC("kprobe")
int dispatch_probe(void *ctx) {
  bpf_tail_call(ctx, &slots, 0);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
