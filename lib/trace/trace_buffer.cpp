#include "histd/trace_buffer.h"

#include <fmt/format.h>

#include <iterator>

namespace histd::trace {

namespace {

// The kernel's nop-tracer help header below the counts line
// (print_func_help_header_irq without the tgid column): five flag columns.
constexpr std::string_view kHelpHeader =
    "#                                _-----=> irqs-off/BH-disabled\n"
    "#                               / _----=> need-resched\n"
    "#                              | / _---=> hardirq/softirq\n"
    "#                              || / _--=> preempt-depth\n"
    "#                              ||| / _-=> migrate-disable\n"
    "#                              |||| /     delay\n"
    "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
    "#              | |         |   |||||     |         |\n";

}  // namespace

std::string format_line(const LineHeader& h, std::string_view event, std::string_view body) {
  // The kernel rounds to the nearest microsecond (ns2usecs adds 500 first).
  const uint64_t usecs = (h.ts_ns + 500) / 1000;
  const std::string_view comm = h.comm.empty() ? std::string_view("<...>") : std::string_view(h.comm);
  // %16s pads by bytes; fmt would pad a UTF-8 comm by its display width.
  std::string out(comm.size() < 16 ? 16 - comm.size() : 0, ' ');
  out += comm;
  // The pid is an int in the kernel's entry; %d of it.
  fmt::format_to(std::back_inserter(out), "-{:<7} [{:03}] ..... {:5}.{:06}: {}: {}\n", static_cast<int32_t>(h.pid),
                 h.cpu, usecs / 1000000, usecs % 1000000, event, body);
  return out;
}

TraceBuffer::TraceBuffer(size_t capacity_bytes, bool overwrite) : capacity_(capacity_bytes), overwrite_(overwrite) {}

void TraceBuffer::append(std::string line) {
  {
    std::lock_guard lock(mu_);
    ++written_;
    // A line larger than the whole buffer can never be stored; evicting
    // everything for it would lose data and still not make room.
    if (line.size() > capacity_) {
      ++overruns_;
      return;
    }
    if (overwrite_) {
      while (bytes_ + line.size() > capacity_) {
        bytes_ -= lines_.front().size();
        lines_.pop_front();
        ++overruns_;
      }
    } else if (bytes_ + line.size() > capacity_) {
      ++overruns_;
      return;
    }
    bytes_ += line.size();
    lines_.push_back(std::move(line));
  }
  cv_.notify_all();
}

std::string TraceBuffer::contents(unsigned cpus) const {
  std::lock_guard lock(mu_);
  std::string out = fmt::format("# tracer: nop\n#\n# entries-in-buffer/entries-written: {}/{}   #P:{}\n#\n",
                                lines_.size(), written_, cpus);
  out.reserve(out.size() + kHelpHeader.size() + bytes_);
  out += kHelpHeader;
  for (const auto& l : lines_) out += l;
  return out;
}

std::string TraceBuffer::lines() const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(bytes_);
  for (const auto& l : lines_) out += l;
  return out;
}

void TraceBuffer::clear() {
  std::lock_guard lock(mu_);
  lines_.clear();
  bytes_ = 0;
  written_ = 0;
  overruns_ = 0;
}

std::optional<std::string> TraceBuffer::consume(std::chrono::milliseconds timeout, size_t max_bytes) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [this] { return !lines_.empty(); })) return std::nullopt;
  std::string out;
  do {
    out += lines_.front();
    bytes_ -= lines_.front().size();
    lines_.pop_front();
  } while (!lines_.empty() && out.size() + lines_.front().size() <= max_bytes);
  return out;
}

uint64_t TraceBuffer::entries() const {
  std::lock_guard lock(mu_);
  return lines_.size();
}

uint64_t TraceBuffer::written() const {
  std::lock_guard lock(mu_);
  return written_;
}

uint64_t TraceBuffer::overruns() const {
  std::lock_guard lock(mu_);
  return overruns_;
}

}  // namespace histd::trace
