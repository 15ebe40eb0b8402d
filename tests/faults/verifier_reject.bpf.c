// SPDX-License-Identifier: GPL-2.0-only
/* For tests/e2e/test_faults.sh: an event object the verifier refuses. A fake
 * clang copies it to its -o path in place of the generated unit. It has the
 * maps a unit with two hist triggers names (histd hands them over before
 * loading; their shapes come from histd's fds) and the two programs, and
 * event_prog reads the record's first 8 bytes, which the verifier never lets
 * a tracepoint program do (docs/design/bpf.md, "Event unit"). Its event's
 * plain triggers are chained (docs/design/bpf.md, "Program chains"): so is it.
 * histd loads it with the numbers the unit reads (codegen::GeneratedUnit):
 * each trigger's filter number and control slot, four. */
#include <linux/bpf.h>
#include "hist_helpers.bpf.h"
#define HISTD_CHAINED 1
#include "chain.bpf.h"

struct histd_any_table {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 1);
  __type(key, __u64);
  __type(value, __u64);
};
struct histd_any_stats {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct histd_table_stats);
};
/* Both triggers' tables have hot slots (plan::choose_hot_slots). */
struct histd_any_hot {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
};
struct histd_any_table tbl0 SEC(".maps"), tbl1 SEC(".maps");
struct histd_any_stats st0 SEC(".maps"), st1 SEC(".maps");
struct histd_any_hot hot0 SEC(".maps"), hot1 SEC(".maps");
const volatile __u64 histd_k[4] SEC(".rodata.consts") = {0};

SEC("tracepoint")
int event_prog(void *ctx) {
  return *(volatile __u64 *)ctx != 0;
}

SEC("raw_tp")
int test_entry(__u64 *args) {
  (void)args;
  return 0;
}
