// SPDX-License-Identifier: GPL-2.0-only
/* The program array a dispatcher tail-calls into: slot 0 holds the event
 * program (ARCHITECTURE decision 2), the other slots the rest of the
 * event's chain (HISTD_CHAIN_SLOTS). Shared by the classic and the raw
 * syscall dispatchers. */
#ifndef HISTD_DISPATCH_SLOTS_BPF_H
#define HISTD_DISPATCH_SLOTS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "hist_shared.h"

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, HISTD_CHAIN_SLOTS);
  __type(key, __u32);
  __type(value, __u32);
} slots SEC(".maps");

#endif
