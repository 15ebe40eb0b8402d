// SPDX-License-Identifier: GPL-2.0-only
// What the hand-written programs of bench/ share (hand.bpf.c, runq_form.bpf.c):
// the usual way to count in a hash, and the kernel's .log2 bucket.
#pragma once

#define EEXIST 17

// Lookup, insert-if-missing (another CPU may win the race: EEXIST), lookup.
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init) {
  void *v = bpf_map_lookup_elem(map, key);
  if (v)
    return v;
  long err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
  if (err && err != -EEXIST)
    return 0;
  return bpf_map_lookup_elem(map, key);
}

// ilog2(roundup_pow_of_two(v)), the kernel's .log2 bucket (0 and 1 give 0).
static __always_inline __u32 log2_slot(__u64 v) {
  if (v <= 1)
    return 0;
  v -= 1;
  __u32 r = 1;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) { r += 1; }
  return r;
}
