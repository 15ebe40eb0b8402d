// SPDX-License-Identifier: GPL-2.0-only
/* Included by every generated event unit (and nothing else but linux/bpf.h).
 * Reusable BPF logic lives here, hand-written and reviewed once, so that the
 * generated code stays small: lookup-or-init, field loads, the record source
 * abstraction shared by the tracepoint path and the test entry. */
#ifndef HISTD_HIST_HELPERS_BPF_H
#define HISTD_HIST_HELPERS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "event_pids.bpf.h"
#include "hist_shared.h"

#define HISTD_EEXIST 17
#define HISTD_E2BIG 7

/* The per-trigger control array, created once by the engine and shared by
 * every event unit (bpf_map__reuse_fd). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, HISTD_CONTROL_SLOTS);
  __type(key, __u32);
  __type(value, struct histd_trigger_control);
} histd_ctl SEC(".maps");

/* Scratch space for records injected through the test entry: records can be
 * larger than the 512-byte BPF stack. */
struct histd_record_buf {
  __u8 data[HISTD_MAX_RECORD];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct histd_record_buf);
} histd_scratch SEC(".maps");

/* Strings that filters compare are copied here: per-CPU, so no handler needs
 * 256 bytes of stack. Twice the longest string, so that an index masked
 * with (HISTD_STR_MAX * 2 - 1) always stays inside. */
#define HISTD_STR_MAX 256
struct histd_str {
  unsigned char s[HISTD_STR_MAX * 2];
  /* Positions pass through these: see histd_forget(). */
  __u32 len;
  __u32 pos;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct histd_str);
} histd_strbuf SEC(".maps");

/* Keys larger than fit comfortably on the stack (several strings) are built
 * here instead: one buffer per synthetic-event depth, because a trigger of a
 * synthetic event runs nested inside the trigger that generated it, while
 * that one's key is still in use. */
#define HISTD_MAX_KEY 1024
struct histd_keybuf {
  __u8 b[HISTD_MAX_KEY];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, HISTD_MAX_DEPTH);
  __type(key, __u32);
  __type(value, struct histd_keybuf);
} histd_keys SEC(".maps");

/* What every handler needs besides the record. On the tracepoint path the
 * record's first 8 bytes are unreadable (the kernel keeps a register pointer
 * there), so common_pid comes from a helper; an injected record carries its
 * own, and the comm of the task it came from. */
struct histd_common {
  __u64 pid;
  __u64 ts;   /* common_timestamp in ns; read only when a trigger needs it */
  __u64 comm; /* injected records: a user pointer to the task's comm; 0: current */
};

/* An entry asks the kernel for common_pid (a helper call) only when the
 * unit reads it. Otherwise the pid is HISTD_PID_UNREAD, which a generated
 * record starts with, and a traced one asks for the pid then
 * (histd_synth_trace): the only way such a record leaves the program. */
#define HISTD_PID_UNREAD ((__u64)-1)
static __always_inline __u64 histd_entry_pid(int needs_pid) {
  return needs_pid ? (__u32)bpf_get_current_pid_tgid() : HISTD_PID_UNREAD;
}

/* The comm of the task the event belongs to. */
static __always_inline void histd_comm(const struct histd_common *c, void *dst, __u32 size) {
  if (c->comm) {
    if (bpf_probe_read_user_str(dst, size, (const void *)c->comm) < 0)
      *(char *)dst = 0;
    return;
  }
  bpf_get_current_comm(dst, size);
}

/* What a synthetic event's triggers see: the generating event's task, and
 * the time the record was generated. */
static __always_inline struct histd_common histd_common_at(const struct histd_common *c, __u64 ts) {
  struct histd_common n = *c;
  n.ts = ts;
  return n;
}

/* Generated synthetic events are built here, then run through the synthetic
 * event's triggers (inlined into the generating program) and, when traced,
 * copied to the ring. One buffer per depth: a record stays in use while the
 * triggers it runs generate the next event of a chain. */
struct histd_synbuf {
  struct histd_notice n;
  __u8 rec[HISTD_SYNTH_MAX];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, HISTD_MAX_DEPTH);
  __type(key, __u32);
  __type(value, struct histd_synbuf);
} histd_synbuf SEC(".maps");

/* Shared by every unit: the engine creates it and hands its fd over. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22);
} histd_ring SEC(".maps");

/* Notices the ring had no room for (HISTD_LOST_*), per CPU; shared by every
 * unit like the ring. A full ring is histd falling behind: nothing in the
 * kernel counts what bpf_ringbuf_output() or _reserve() turn away. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, HISTD_LOST_SLOTS);
  __type(key, __u32);
  __type(value, __u64);
} histd_lost SEC(".maps");

static __always_inline void histd_count_lost(__u32 kind) {
  __u64 *n = bpf_map_lookup_elem(&histd_lost, &kind);
  if (n)
    __sync_fetch_and_add(n, 1);
}

/* The kernel's u64 division of hist expressions: by zero gives -1. */
static __always_inline __u64 histd_div(__u64 a, __u64 b) {
  return b ? a / b : ~0ULL;
}

/* Division by a constant that is not a power of two, up to 1 << 20: the
 * kernel multiplies and shifts (its result can be one too large). */
static __always_inline __u64 histd_div_mult(__u64 a, __u64 d, __u64 mult) {
  if (a < (1ULL << 20))
    return (a * mult + ((1ULL << 20) - 1)) >> 20;
  return a / d;
}

static __always_inline struct histd_synbuf *histd_synth_begin(const struct histd_common *c, __u32 id, __u32 size,
                                                               __u64 ts, __u32 depth) {
  struct histd_synbuf *b = bpf_map_lookup_elem(&histd_synbuf, &depth);
  if (!b)
    return 0;
  __builtin_memset(b->rec, 0, 16);
  b->n.id = id;
  b->n.kind = HISTD_NOTICE_SYNTH;
  b->n.size = size;
  b->n.ts = ts;
  *(__u16 *)b->rec = (__u16)id;
  *(__s32 *)(b->rec + 4) = (__s32)c->pid;
  return b;
}

/* Only a traced record goes to histd: the notice's cpu and comm (a helper
 * call each) are filled then. */
static __always_inline int histd_tracing_on(void);

static __always_inline void histd_synth_trace(const struct histd_common *c, struct histd_synbuf *b, __u32 size) {
  if (!histd_tracing_on())
    return;
  b->n.cpu = bpf_get_smp_processor_id();
  histd_comm(c, b->n.comm, sizeof(b->n.comm));
  if (c->pid == HISTD_PID_UNREAD)
    *(__s32 *)(b->rec + 4) = (__s32)bpf_get_current_pid_tgid();
  if (bpf_ringbuf_output(&histd_ring, b, sizeof(struct histd_notice) + size, 0))
    histd_count_lost(HISTD_LOST_TRACE);
}

/* Not cleared: every load ends the string with a NUL, and a word compare
 * masks off what lies past the string's length (the last event's bytes). */
static __always_inline struct histd_str *histd_str_buf(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&histd_strbuf, &zero);
}

/* A glob's search between stars over a long string, a place a bpf_loop()
 * round (lib/codegen/filter_code.cpp): in `b`, from `pos` on, ending
 * before `end`; `at` is one past the place found, 0 while none is. */
struct histd_search {
  struct histd_str *b;
  __u32 pos;
  __u32 end;
  __u32 at;
};

/* Stores a value to map memory and reads it back. The verifier tracks
 * registers exactly but not map contents, so the value comes back as a range:
 * the code after a loop is then verified once, not once per iteration that
 * could have ended it. */
static __always_inline __u32 histd_forget(volatile __u32 *slot, __u32 v) {
  *slot = v;
  return *slot & (HISTD_STR_MAX * 2 - 1);
}

/* The string's length, of at most `longest` (<= HISTD_STR_MAX) bytes: a
 * constant, so that the verifier walks no more of the loop than that. */
static __always_inline __u32 histd_strlen(struct histd_str *b, __u32 longest) {
  __u32 i;
  for (i = 0; i < longest; i++)
    if (!b->s[i])
      break;
  return histd_forget(&b->len, i);
}


static __always_inline int histd_paused(__u32 slot) {
  struct histd_trigger_control *c = bpf_map_lookup_elem(&histd_ctl, &slot);
  return !c || c->paused;
}

/* enable_hist/disable_hist: takes one firing from the trigger's count.
 * Concurrent firings on other CPUs race for the last one: compare-and-swap
 * so the count never wraps. */
static __always_inline int histd_take_count(__u32 slot) {
  struct histd_trigger_control *c = bpf_map_lookup_elem(&histd_ctl, &slot);
  if (!c)
    return 0;
  __u32 n = c->count;
  if (n == HISTD_UNLIMITED)
    return 1;
  if (n == 0)
    return 0;
  return __sync_val_compare_and_swap(&c->count, n, n - 1) == n;
}

static __always_inline void histd_set_paused(__u32 slot, __u32 paused) {
  struct histd_trigger_control *c = bpf_map_lookup_elem(&histd_ctl, &slot);
  if (c)
    c->paused = paused;
}

/* tracing_on: its slot's paused flag set means tracing is off. Records,
 * synthetic events' trace lines and stacks are then not sent at all. */
static __always_inline int histd_tracing_on(void) {
  return !histd_paused(HISTD_TRACING_SLOT);
}

/* Records of enabled kernel events are copied to a per-CPU buffer of this
 * type on their way to the ring (a record with its strings can be larger
 * than the BPF stack). Only a unit that records defines one (histd_recbuf),
 * so no other event program pays for its memory. */
struct histd_recbuf {
  struct histd_notice n;
  __u8 rec[HISTD_MAX_RECORD];
};

/* Kernel stacks on their way to the ring (stacktrace triggers, and
 * options/stacktrace after a record): a unit that sends them defines one
 * (histd_stkbuf). The notice's id is the task's pid. */
struct histd_stkbuf {
  struct histd_notice n;
  __u64 ips[HISTD_STACK_FRAMES];
};

static __always_inline void histd_notice_header(struct histd_notice *n, __u32 kind, __u32 id, __u32 size,
                                                const struct histd_common *c) {
  n->id = id;
  n->kind = kind;
  n->size = size;
  n->ts = c->ts;
  n->cpu = bpf_get_smp_processor_id();
  histd_comm(c, n->comm, sizeof(n->comm));
}

/* Sends the kernel stack at the event to histd, as tracefs records a
 * stack trace after an event, through `stkbuf`. */
static __always_inline void histd_stack_out(void *stkbuf, void *ctx, const struct histd_common *c) {
  __u32 zero = 0;
  struct histd_stkbuf *b = bpf_map_lookup_elem(stkbuf, &zero);
  if (!b)
    return;
  long n = bpf_get_stack(ctx, b->ips, sizeof(b->ips), 0);
  if (n <= 0)
    return;
  __u32 size = (__u32)n & (sizeof(b->ips) * 2 - 1);
  if (size > sizeof(b->ips))
    size = sizeof(b->ips);
  histd_notice_header(&b->n, HISTD_NOTICE_STACK, (__u32)c->pid, size, c);
  if (bpf_ringbuf_output(&histd_ring, b, sizeof(struct histd_notice) + size, 0))
    histd_count_lost(HISTD_LOST_TRACE);
}

/* A snapshot trigger fired: histd swaps the trace and snapshot buffers. */
static __always_inline void histd_snapshot_out(__u32 slot, const struct histd_common *c) {
  struct histd_notice n = {0};
  histd_notice_header(&n, HISTD_NOTICE_SNAPSHOT_TRIGGER, slot, 0, c);
  if (bpf_ringbuf_output(&histd_ring, &n, sizeof(n), 0))
    histd_count_lost(HISTD_LOST_SNAPSHOT);
}

/* Sends the first `size` bytes of event `id`'s record to histd, as tracefs
 * records it, through `recbuf`. The common fields are rebuilt: a tracepoint
 * program cannot read them (the kernel keeps a register pointer in their
 * place); the flags and preempt count, which BPF cannot know, are 0. */
static __always_inline void histd_record_out(void *recbuf, const void *rec, __u32 size, __u32 id,
                                             const struct histd_common *c) {
  __u32 zero = 0;
  struct histd_recbuf *b = bpf_map_lookup_elem(recbuf, &zero);
  if (!b)
    return;
  if (size > HISTD_MAX_RECORD)
    size = HISTD_MAX_RECORD;
  if (size < 8)
    size = 8;
  if (bpf_probe_read_kernel(b->rec + 8, size - 8, (const char *)rec + 8))
    return;
  *(__u16 *)b->rec = (__u16)id;
  b->rec[2] = 0;
  b->rec[3] = 0;
  *(__s32 *)(b->rec + 4) = (__s32)c->pid;
  histd_notice_header(&b->n, HISTD_NOTICE_RECORD, id, size, c);
  if (bpf_ringbuf_output(&histd_ring, b, sizeof(struct histd_notice) + size, 0))
    histd_count_lost(HISTD_LOST_TRACE);
}


/* Creates the entry for `key` after a failed lookup, with `init` as its
 * value; counts a drop and returns NULL when the map is full (marking the
 * drops with `full`: HISTD_TABLE_FULL for a table, 0 for a variable map).
 * Another CPU may create the same key between the lookup and the update:
 * EEXIST then just means "look again". */
static __always_inline void *histd_insert(void *map, const void *key, const void *init,
                                          struct histd_table_stats *st, __u64 full) {
  void *v;
  long err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
  if (err && err != -HISTD_EEXIST) {
    st->drops = (st->drops + 1) | (err == -HISTD_E2BIG ? full : 0);
    return 0;
  }
  v = bpf_map_lookup_elem(map, key);
  if (!v)
    st->drops++;
  return v;
}

/* histd_insert() for a table's entry: once this CPU found the table full
 * (HISTD_TABLE_FULL), a new key is a drop without asking the kernel. */
static __always_inline void *histd_insert_entry(void *map, const void *key, const void *init,
                                                struct histd_table_stats *st) {
  if (st->drops & HISTD_TABLE_FULL) {
    st->drops++;
    return 0;
  }
  return histd_insert(map, key, init, st, HISTD_TABLE_FULL);
}

static __always_inline struct histd_table_stats *histd_stats(void *map) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(map, &zero);
}

/* Field loads: the record is either the tracepoint context or the scratch
 * buffer; both are plain memory at a constant offset. Integers are widened to
 * u64 the way the kernel's hist_field_<type> functions do: sign-extended for
 * signed types. */
#define HISTD_LOAD_U8(rec, off) ((__u64) * (const __u8 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_U16(rec, off) ((__u64) * (const __u16 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_U32(rec, off) ((__u64) * (const __u32 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_U64(rec, off) (*(const __u64 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_S8(rec, off) ((__u64)(__s64) * (const __s8 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_S16(rec, off) ((__u64)(__s64) * (const __s16 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_S32(rec, off) ((__u64)(__s64) * (const __s32 *)((const char *)(rec) + (off)))
#define HISTD_LOAD_S64(rec, off) (*(const __u64 *)((const char *)(rec) + (off)))

/* The same by member of the unit's struct histd_rec, whose offset histd
 * gives at load (CO-RE): units that differ only in which fields they read
 * are one text, one compiled object. */
#define HISTD_FIELD_U8(rec, f) ((__u64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_U16(rec, f) ((__u64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_U32(rec, f) ((__u64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_U64(rec, f) ((__u64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_S8(rec, f) ((__u64)(__s64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_S16(rec, f) ((__u64)(__s64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_S32(rec, f) ((__u64)(__s64)((const struct histd_rec *)(rec))->f)
#define HISTD_FIELD_S64(rec, f) ((__u64)((const struct histd_rec *)(rec))->f)

/* ilog2(roundup_pow_of_two(v)) as the kernel's .log2 computes it: 0 and 1
 * map to 0. Written without clz, which BPF lacks. */
static __always_inline __u64 histd_log2(__u64 v) {
  if (v <= 1)
    return 0;
  v -= 1;
  __u64 r = 1;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) { r += 1; }
  return r;
}

/* The test entry: args[0] is a user pointer to a record, args[1] its length,
 * args[2] the record's timestamp (0: now; synthetic events carry theirs),
 * args[3] a user pointer to the comm of the record's task (0: current).
 * The record is copied to per-CPU scratch and handed to the same handler the
 * tracepoint path runs; common_pid comes from the record itself. */
#define HISTD_TEST_ENTRY(handler, needs_ts)                                    \
  SEC("raw_tp")                                                                \
  int test_entry(__u64 *args) {                                                \
    __u32 zero = 0;                                                            \
    struct histd_record_buf *buf = bpf_map_lookup_elem(&histd_scratch, &zero); \
    if (!buf)                                                                  \
      return 1;                                                                \
    __u64 len = args[1];                                                       \
    if (len < 8 || len > HISTD_MAX_RECORD)                                     \
      return 2;                                                                \
    __builtin_memset(buf->data, 0, 8);                                         \
    if (bpf_probe_read_user(buf->data, len, (const void *)args[0]))           \
      return 3;                                                                \
    struct histd_common c = {.pid = (__u64)(__s64) * (__s32 *)(buf->data + 4)}; \
    c.comm = args[3];                                                          \
    if (args[2])                                                               \
      c.ts = args[2];                                                          \
    else if (needs_ts)                                                         \
      c.ts = bpf_ktime_get_ns();                                               \
    handler(args, buf->data, &c);                                              \
    return 0;                                                                  \
  }

/* The tracepoint entry the dispatcher tail-calls. common_pid comes from the
 * helper: the verifier refuses reads of the record's common fields. A helper
 * call costs as much as a per-CPU table update, so the entry makes only the
 * calls its triggers read (needs_ts, needs_pid: 0 or 1). Each entry but the
 * test entry runs nothing of an event set_event_pid hides (its unit's
 * histd_pid_ignored(); docs/design/bpf.md, "set_event_pid"). */
#define HISTD_EVENT_ENTRY(handler, needs_ts, needs_pid)                        \
  SEC("tracepoint")                                                            \
  int event_prog(void *ctx) {                                                  \
    HISTD_RUN_RECORD(handler, ctx, needs_ts, needs_pid);                       \
  }

/* The start of an entry that builds its record in per-CPU scratch (the
 * raw syscall entries, probe entries): nothing of an event set_event_pid
 * hides, then `rec`, `buf` and the task and time the unit reads. */
#define HISTD_SCRATCH_ENTRY_BEGIN(needs_ts, needs_pid)                         \
  if (histd_pid_ignored(ctx))                                                  \
    return 0;                                                                  \
  __u32 zero = 0;                                                              \
  struct histd_record_buf *buf = bpf_map_lookup_elem(&histd_scratch, &zero);   \
  if (!buf)                                                                    \
    return 0;                                                                  \
  struct histd_common c = {.pid = histd_entry_pid(needs_pid)};                 \
  if (needs_ts)                                                                \
    c.ts = bpf_ktime_get_ns()

#include "syscall_entry.bpf.h"
#include "probe_entry.bpf.h"
/* btf_entry.bpf.h is included by the units entered BTF-typed themselves,
 * after this prelude: histd-cc names its CO-RE types anew for each compile
 * there (daemon/histd-cc/prelude.h, with_distinct_core_names). */

char LICENSE[] SEC("license") = "GPL";

#endif
