// The trace buffer behind histd's `trace`, `trace_pipe` and `snapshot`
// files: formatted event lines, bounded in bytes, in one of the two modes
// of the kernel's ring buffer (seeds/002): overwrite (the oldest lines make
// room, counted as overruns) or producer/consumer (new lines are dropped
// when full, also counted). Thread-safe. Pure apart from its lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace histd::trace {

// What the tracefs line prefix needs.
struct LineHeader {
  std::string comm;    // the task's comm ("<...>" when unknown)
  uint32_t pid = 0;
  uint32_t cpu = 0;
  uint64_t ts_ns = 0;  // printed as seconds.microseconds
};

// "           bash-1234    [001] .....   123.456789: <event>: <body>\n",
// the kernel's default trace line (comm right-aligned in 16, pid left in 7,
// cpu in 3 digits, flags as five '.', timestamp %5lu.%06lu).
std::string format_line(const LineHeader& h, std::string_view event, std::string_view body);

class TraceBuffer {
 public:
  TraceBuffer(size_t capacity_bytes, bool overwrite);

  void append(std::string line);  // one formatted line, '\n' included
  // What reading `trace` shows: the kernel's "# tracer: nop" header with the
  // entries-in-buffer/entries-written counts and #P:<cpus>, then the lines.
  std::string contents(unsigned cpus) const;
  // Only the lines.
  std::string lines() const;
  void clear();  // truncating `trace`; counters restart
  // trace_pipe: waits up to `timeout` for lines, then removes and returns
  // whole lines totalling at most `max_bytes` (at least one line, even if
  // longer); nullopt when none arrived.
  std::optional<std::string> consume(std::chrono::milliseconds timeout, size_t max_bytes);

  uint64_t entries() const;   // lines in the buffer now
  uint64_t written() const;   // lines ever appended since the last clear
  uint64_t overruns() const;  // lines lost: overwritten, or dropped when full
  size_t capacity() const { return capacity_; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  size_t capacity_;
  bool overwrite_;
  size_t bytes_ = 0;
  uint64_t written_ = 0;
  uint64_t overruns_ = 0;
};

}  // namespace histd::trace
