// SPDX-License-Identifier: GPL-2.0-only
// The trace buffer behind histd's `trace`, `trace_pipe` and `snapshot`
// files: formatted event lines, bounded in bytes, in one of the two modes
// of the kernel's ring buffer (seeds/002): overwrite (the oldest lines make
// room, counted as overruns) or producer/consumer (new lines are dropped
// when full, also counted). Thread-safe. Pure apart from its lock.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "histd/render.h"
#include "histd/synth.h"

namespace histd::trace {

// What the tracefs line prefix needs.
struct LineHeader {
  std::string comm;  // the task's comm ("<...>" when unknown)
  uint32_t pid = 0;
  uint32_t cpu = 0;
  uint64_t ts_ns = 0;  // printed as seconds.microseconds
};

// "           bash-1234    [001] .....   123.456789: <event>: <body>\n",
// the kernel's default trace line (comm right-aligned in 16, pid left in 7,
// cpu in 3 digits, flags as five '.', timestamp %5lu.%06lu).
std::string format_line(const LineHeader& h, std::string_view event, std::string_view body);
// The same with what follows the prefix as one text ("<event>: <body>", or
// a system call's "sys_read(fd: 3, ...)"): printfmt::Printer::line_text.
std::string format_line(const LineHeader& h, std::string_view text);

// What an empty snapshot file shows after its "# tracer:" lines: whether a
// snapshot buffer is allocated, and the commands the file takes (the
// kernel's print_snapshot_help()).
std::string snapshot_help(bool allocated);

// A kernel stack as the kernel's trace prints a stack trace entry (its
// trace_stack_print()): "<stack trace>" and a " => <symbol>" line per
// frame, innermost first, the symbol without its offset, an address no
// symbol names as 0x%08lx (hidden as render::Options says); the leading
// frames of the BPF machinery that took it are left out. Without the final
// newline (format_line() adds it).
std::string stack_trace_text(std::span<const uint64_t> frames, const render::Resolver* resolver,
                             const render::Options& options = {});

// The body the kernel's print_synth_event() prints for one record of a
// synthetic event: what follows "<name>: " in the trace line, without the
// final newline. Fields in definition order as name=value, separated by one
// space (", " is only in the format file's print fmt):
//   integers   the 1/2/4/8 bytes at the offset, little-endian. Signed types
//              print signed only at 4 and 8 bytes: the kernel passes 1- and
//              2-byte values zero-extended to %d, so an s8 of -1 prints 255.
//   gfp_t      hex, then " (<flags>)" after the separator, as the kernel
//              does; flags print as 0x<hex> (no gfp name table), "" if zero.
//   char[N]    the NUL-terminated text in the 256-byte slot at the offset.
//   char[]     the u32 __data_loc at the offset (low 16 bits: offset in the
//              record, high 16: length); the text there, up to the length
//              or a NUL.
//   long[]     "name=STACK:\n", then "=> <sym+0xoff/0xsize>\n" for every
//              8-byte element of the __data_loc array after the first (the
//              kernel keeps the frame count there); no separator follows.
//              Addresses resolve through `resolver` (hex "0x..." without one
//              or when unknown).
// With options.hide_kernel_addresses, integers of an address type
// (table::address_kind) in the kernel half and unresolved frames print 0.
// Never reads outside `record`: integer bytes past its end read as zero,
// text and frames are cut at its end, an out-of-range __data_loc prints
// nothing.
std::string synth_event_body(const synth::SynthDefinition& def, std::span<const uint8_t> record,
                             const render::Resolver* resolver = nullptr, const render::Options& options = {});

class TraceBuffer {
 public:
  TraceBuffer(size_t capacity_bytes, bool overwrite);

  // One formatted line, '\n' included, and the same line as a reader who may
  // not see kernel addresses reads it ("": the same text). Only `line`
  // counts against the capacity (the other is never longer).
  // Dropped while not recording. `cpu`: where the event happened, for
  // per_cpu/cpuN/trace and trace_pipe (kAnyCpu: shown in none of them).
  static constexpr uint32_t kAnyCpu = UINT32_MAX;
  void append(std::string line, std::string hidden = {}, uint32_t cpu = kAnyCpu);
  // tracing_on: whether appended lines are kept. A mode of the buffer's
  // object, which a swap() leaves where it is (the kernel's tracing_on
  // belongs to the trace array, not to the buffer a snapshot swaps in).
  void set_recording(bool on);
  bool recording() const;
  // `count` events of `cpu` that never reached the buffer (histd's ring
  // from BPF was full): reported as tracefs reports lost events, a
  // "CPU:<cpu> [LOST <count> EVENTS]" line where the reader meets the gap
  // (not an entry), and counted in entries-written, which so counts every
  // event written, kept or lost, as the kernel's does.
  void note_lost(uint32_t cpu, uint64_t count);
  // What reading `trace` shows: the kernel's "# tracer: nop" header with the
  // entries-in-buffer/entries-written counts and #P:<cpus>, then the lines
  // (with `hide`, as appended for readers who may not see kernel addresses).
  // `cpu`: only that CPU's lines and counts (per_cpu/cpuN/trace).
  std::string contents(unsigned cpus, bool hide = false, uint32_t cpu = kAnyCpu) const;
  // Only the lines.
  std::string lines(bool hide = false) const;
  void clear();  // truncating `trace`; counters restart
  // The kernel's snapshot: the two buffers trade places, lines and counters,
  // in O(1) whatever they hold ("Ftrace swaps the current buffer with a spare
  // buffer, and tracing continues in the new current (=previous spare)
  // buffer", ftrace.rst). Nothing is copied and nothing is cleared.
  // Capacities and modes stay with their objects (both are equal in use).
  void swap(TraceBuffer& other);
  // trace_pipe: waits up to `timeout` for lines, then removes and returns
  // whole lines totalling at most `max_bytes` (at least one line, even if
  // longer); nullopt when none arrived.
  // `cpu`: only that CPU's lines (per_cpu/cpuN/trace_pipe), without waiting.
  std::optional<std::string> consume(std::chrono::milliseconds timeout, size_t max_bytes, bool hide = false,
                                     uint32_t cpu = kAnyCpu);

  uint64_t entries() const;   // event lines in the buffer now
  uint64_t written() const;   // event lines ever appended (and lost) since the last clear
  uint64_t overruns() const;  // lines lost: overwritten, or dropped when full
  size_t capacity() const;
  // buffer_size_kb: a new capacity; the oldest lines that no longer fit
  // are dropped and counted as overruns.
  void resize(size_t capacity_bytes);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Line {
    std::string text;
    std::string hidden;  // "": the same as text
    bool entry = true;   // false: a note_lost() line, which is no event
    uint32_t cpu = kAnyCpu;
    const std::string& as(bool hide) const { return hide && !hidden.empty() ? hidden : text; }
  };
  void push_locked(Line line);
  void pop_front_locked();
  std::optional<std::string> consume_cpu_locked(size_t max_bytes, bool hide, uint32_t cpu);
  std::deque<Line> lines_;
  uint64_t entries_ = 0;  // of lines_, those that are events
  size_t capacity_;
  bool overwrite_;
  bool recording_ = true;
  size_t bytes_ = 0;
  uint64_t written_ = 0;
  uint64_t overruns_ = 0;
  std::map<uint32_t, uint64_t> written_on_;  // written_, per CPU
};

// The comms of the tasks whose events were recorded, as the kernel's
// saved_cmdlines keeps them (trace_save_cmdline()): `size` slots
// (saved_cmdlines_size, 128 at first) filled in turn, the oldest task's
// slot taken by a new one, a task seen again keeping its slot with its
// comm brought up to date. Readers (trace-cmd report) name a record's pid
// by it. Thread-safe.
class Cmdlines {
 public:
  static constexpr size_t kDefaultSize = 128;
  // The kernel's limit (PID_MAX_DEFAULT).
  static constexpr size_t kMaxSize = 32768;
  explicit Cmdlines(size_t size = kDefaultSize);

  void save(uint32_t pid, std::string_view comm);
  // saved_cmdlines: "<pid> <comm>" a line, in slot order.
  std::string text() const;
  // The comm last saved for `pid`; "" if none.
  std::string comm(uint32_t pid) const;
  size_t size() const;
  // saved_cmdlines_size: a new number of slots (1 to kMaxSize), which
  // starts empty, as the kernel's allocate_cmdlines_buffer(); false, and
  // nothing changed, for a size out of range.
  bool resize(size_t size);

 private:
  mutable std::mutex mu_;
  struct Slot {
    uint32_t pid = 0;
    std::string comm;
    bool used = false;
  };
  std::vector<Slot> slots_;
  std::unordered_map<uint32_t, size_t> slot_of_;
  size_t next_ = 0;
};

// ---- raw per-CPU buffers: the kernel's ring-buffer pages

// A sub-buffer as the kernel's events/header_page describes it: a u64 time
// stamp, a 64-bit commit word (bytes of events, with the missed-events
// flags in bits 31 and 30), then 4080 bytes of events, each behind a
// 32-bit header (type_len: 5 bits, time_delta: 27 bits, header_event).
inline constexpr size_t kRawPageSize = 4096;
inline constexpr size_t kRawPageHeader = 16;
inline constexpr size_t kRawPageData = kRawPageSize - kRawPageHeader;
// The commit word's flags (the kernel's RB_MISSED_EVENTS, RB_MISSED_STORED).
inline constexpr uint64_t kRawMissedEvents = uint64_t{1} << 31;
inline constexpr uint64_t kRawMissedStored = uint64_t{1} << 30;

// Writes events into one page (seeds/002, with header_event's 5-bit
// type_len): a record of up to 112 bytes takes type_len = its length in
// words, a longer one type_len 0 and its length in the first array word; a time_delta past 27 bits is carried by
// a time extend (type_len 30) before the event; the page's time stamp is
// its first event's, whose delta is 0. Pure.
class RawPageWriter {
 public:
  RawPageWriter();
  // Whether the event fitted (with its time extend); a page that does not
  // take it is left as it was.
  bool add(uint64_t ts, std::span<const uint8_t> data);
  // Ends the page: the space left (8 bytes or more) becomes a padding
  // event (type_len 29) that the commit covers, as the kernel's writer
  // ends a page an event did not fit in.
  void close();
  bool empty() const { return events_ == 0; }
  uint32_t events() const { return events_; }
  size_t used() const { return used_; }  // bytes of events (no padding)
  uint64_t first_ts() const { return first_ts_; }
  // The page as trace_pipe_raw hands it out: `missed` events lost before
  // it are flagged in the commit word and, when the padding (or free
  // space) leaves room, stored after the events (the commit then ends at
  // the events, as the kernel's read of a page does).
  std::string page(uint64_t missed) const;

 private:
  void put_word(uint32_t w);
  std::string data_;  // the 4080 bytes after the header
  size_t used_ = 0;
  size_t commit_ = 0;  // used_, or the page's end once closed with padding
  uint32_t events_ = 0;
  uint64_t first_ts_ = 0;
  uint64_t last_ts_ = 0;
};

// One CPU's counts, as per_cpu/cpuN/stats shows them.
struct RawStats {
  uint64_t entries = 0;  // events in the buffer now
  uint64_t overrun = 0;  // events overwritten by newer ones (the buffer was full)
  uint64_t bytes = 0;    // bytes of events in the buffer now
  uint64_t oldest_ts = 0;
  uint64_t dropped = 0;  // events that never reached the buffer (histd's ring was full)
  uint64_t read = 0;     // events taken out by readers
};

// One CPU's raw events, in pages, bounded: when full, the oldest page
// makes room (the kernel's overwrite mode) and its events count as
// overrun. trace_pipe_raw takes pages out whole, the page being written
// too (a reader never waits for a page to fill); a splice takes the full
// ones only, as the kernel's does. Thread-safe.
class RawBuffer {
 public:
  explicit RawBuffer(size_t capacity_bytes);
  void append(uint64_t ts, std::span<const uint8_t> record);
  // `count` events lost before they reached this buffer.
  void note_dropped(uint64_t count);
  // The oldest page, kRawPageSize bytes; nullopt when there are no events.
  // `full_only`: a page no more events go to, never the one being written.
  std::optional<std::string> take_page(bool full_only = false);
  bool empty() const;
  // Whether a page no more events go to is there.
  bool has_full_page() const;
  RawStats stats() const;
  void clear();
  // buffer_size_kb: holds `capacity_bytes` (two pages at least) from now;
  // the oldest pages that no longer fit are dropped and counted as overrun.
  void resize(size_t capacity_bytes);
  size_t capacity() const;

 private:
  mutable std::mutex mu_;
  std::deque<RawPageWriter> pages_;  // the last one is being written
  size_t capacity_pages_;
  uint64_t missed_ = 0;  // lost since the last page read: flagged on the next
  RawStats stats_;
};

}  // namespace histd::trace
