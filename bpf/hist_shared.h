/* Structs shared by BPF programs and user space. Fixed-width types only. */
#ifndef HISTD_HIST_SHARED_H
#define HISTD_HIST_SHARED_H

#ifdef __BPF__
#include <linux/types.h>
typedef __u64 histd_u64;
typedef __u32 histd_u32;
#else
#include <stdint.h>
typedef uint64_t histd_u64;
typedef uint32_t histd_u32;
#endif

/* Per table, in a one-slot per-CPU array: summed by user space. Hits counts
 * events that created or updated an entry; drops counts events whose new key
 * found the table full. */
struct histd_table_stats {
  histd_u64 hits;
  histd_u64 drops;
};

/* Per trigger, in the engine's shared control array: what user space and
 * enable_hist/disable_hist flip without recompiling anything. */
struct histd_trigger_control {
  histd_u32 paused; /* hist triggers */
  histd_u32 count;  /* enable_hist/disable_hist: firings left; HISTD_UNLIMITED */
};

#define HISTD_UNLIMITED 0xffffffffu

/* A generated synthetic event on its way to user space through the ring
 * buffer: this header, then the event's record (common_type = id). */
struct histd_notice {
  histd_u32 id;   /* the synthetic event's id; snapshot: the trigger's control slot */
  histd_u32 size; /* bytes of the record after the header */
  histd_u64 ts;   /* common_timestamp, ns */
  histd_u32 cpu;
  histd_u32 kind; /* HISTD_NOTICE_* */
  char comm[16];
};

#define HISTD_NOTICE_SYNTH 0
/* onmax()/onchange() .snapshot(): a u64 value, then the entry's key. */
#define HISTD_NOTICE_SNAPSHOT 1

/* The largest synthetic event record: header fields, 256-byte strings. */
#define HISTD_SYNTH_MAX 8192

/* Maximum number of triggers alive at once: the size of the control array. */
#define HISTD_MAX_TRIGGERS 4096

/* The test entry copies at most this many bytes of an injected record. */
#define HISTD_MAX_RECORD 4096

#endif
