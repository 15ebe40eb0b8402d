// SPDX-License-Identifier: GPL-2.0-only
/* set_event_pid's pids, as every unit of a tree (hist_helpers.bpf.h) and
 * the fork followers of options/event-fork (event_pids.bpf.c) share them:
 * the listed pids (task->pid, the machine's first PID namespace's numbers,
 * as every BPF program sees them), each with a 1; allocated as pids are
 * listed. The deployer makes the map; each object reuses its fd. */
#ifndef HISTD_EVENT_PIDS_BPF_H
#define HISTD_EVENT_PIDS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "hist_shared.h"

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, HISTD_MAX_EVENT_PIDS);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, __u8);
} histd_pids SEC(".maps");

/* Whether `pid` is listed. */
static __always_inline int histd_pid_listed(__u32 pid) {
  return bpf_map_lookup_elem(&histd_pids, &pid) != 0;
}

#endif
