// SPDX-License-Identifier: GPL-2.0-only
/* The entry of a probe event's program (kprobe or kretprobe), with the
 * fetches its generated code makes (lib/codegen/probe_entry.cpp). A kprobe
 * program sees x86_64 struct pt_regs, not a record: the entry rebuilds the
 * record the kernel's kprobe event would have written, in per-CPU scratch.
 * A fetch that faults leaves its field zero (a string: empty), where the
 * kernel would print "(fault)". */
#ifndef HISTD_PROBE_ENTRY_BPF_H
#define HISTD_PROBE_ENTRY_BPF_H

#define HISTD_REG_IP 128
/* The most of one string argument kept in the record: a hist key holds no
 * more. */
#define HISTD_PROBE_STRING 256

#define HISTD_PROBE_ENTRY_BEGIN(needs_ts, needs_pid)                           \
  HISTD_SCRATCH_ENTRY_BEGIN(needs_ts, needs_pid);                              \
  __u8 *rec = buf->data;                                                       \
  *(__u64 *)rec = 0

/* 8 bytes at addr: a pointer on the way to the value. */
static __always_inline __u64 histd_probe_load(__u64 addr, int user) {
  __u64 v = 0;
  long err = user ? bpf_probe_read_user(&v, sizeof(v), (const void *)addr)
                  : bpf_probe_read_kernel(&v, sizeof(v), (const void *)addr);
  return err ? 0 : v;
}

/* The field's `size` bytes at addr. */
static __always_inline void histd_probe_read(__u8 *dst, __u32 size, __u64 addr, int user) {
  long err = user ? bpf_probe_read_user(dst, size, (const void *)addr)
                  : bpf_probe_read_kernel(dst, size, (const void *)addr);
  if (err)
    __builtin_memset(dst, 0, size);
}

/* The string at addr after the record's `data` bytes, and its __data_loc
 * word (length with the NUL << 16 | offset) at `loc`; returns where the next
 * string goes. */
static __always_inline __u32 histd_probe_string(__u8 *rec, __u32 loc, __u32 data, __u64 addr, int user) {
  __u32 at = data;
  long n = 0;
  if (at <= HISTD_MAX_RECORD - HISTD_PROBE_STRING) {
    n = user ? bpf_probe_read_user_str(rec + at, HISTD_PROBE_STRING, (const void *)addr)
             : bpf_probe_read_kernel_str(rec + at, HISTD_PROBE_STRING, (const void *)addr);
    if (n < 0)
      n = 0;
  } else {
    at = 0;
  }
  *(__u32 *)(rec + loc) = ((__u32)n << 16) | at;
  return at + (__u32)n;
}

/* An eprobe's $FIELD in the attached event's record (the tracepoint
 * program's ctx): a number (`size` bytes, sign-extended when `is_signed`),
 * or for a string field (`string`: 1 char[N], 2 __data_loc) the address of
 * its text, as the kernel's get_event_field(). */
static __always_inline __u64 histd_probe_field(void *ctx, __u32 off, __u32 size, int is_signed, int string) {
  if (string == 1)
    return (__u64)ctx + off;
  if (string == 2) {
    __u32 loc = 0;
    bpf_probe_read_kernel(&loc, sizeof(loc), (const char *)ctx + off);
    return (__u64)ctx + (loc & 0xffff);
  }
  __u64 v = 0;
  if (bpf_probe_read_kernel(&v, size, (const char *)ctx + off))
    return 0;
  if (is_signed && size < 8) {
    const __u32 shift = 64 - 8 * size;
    v = (__u64)(((__s64)(v << shift)) >> shift);
  }
  return v;
}

/* An eprobe on a synthetic event: its record is built in `buf` (a per-CPU
 * struct histd_recbuf of the unit) from the record just generated, then
 * sent to the ring as a traced record of event `id`, `size` bytes. */
static __always_inline struct histd_recbuf *histd_eprobe_begin(void *buf) {
  __u32 zero = 0;
  struct histd_recbuf *b = bpf_map_lookup_elem(buf, &zero);
  if (b)
    *(__u64 *)b->rec = 0;
  return b;
}

static __always_inline void histd_eprobe_send(struct histd_recbuf *b, __u32 size, __u32 id,
                                              const struct histd_common *c) {
  if (size > HISTD_MAX_RECORD)
    size = HISTD_MAX_RECORD;
  if (size < 8)
    size = 8;
  *(__u16 *)b->rec = (__u16)id;
  *(__s32 *)(b->rec + 4) = (__s32)c->pid;
  histd_notice_header(&b->n, HISTD_NOTICE_RECORD, id, size, c);
  if (bpf_ringbuf_output(&histd_ring, b, sizeof(struct histd_notice) + size, 0))
    histd_count_lost(HISTD_LOST_TRACE);
}

/* $comm: the task's comm as a string argument. */
static __always_inline __u32 histd_probe_comm(__u8 *rec, __u32 loc, __u32 data) {
  char comm[16] = {0};
  bpf_get_current_comm(comm, sizeof(comm));
  return histd_probe_string(rec, loc, data, (__u64)comm, 0);
}

#endif
