// SPDX-License-Identifier: GPL-2.0-only
#include "histd/trace_buffer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "histd/render.h"

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

// STR_VAR_LEN_MAX: the kernel prints strings with "%.*s" and this precision.
constexpr size_t kStrVarLenMax = 256;
// sizeof(long) on the 64-bit kernels histd runs on: one stack element.
constexpr size_t kStackEntry = 8;

// `n` bytes at `off`, little-endian; bytes past the record read as zero.
uint64_t read_le(std::span<const uint8_t> rec, size_t off, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && off < rec.size() && i < rec.size() - off; ++i) v |= uint64_t{rec[off + i]} << (8 * i);
  return v;
}

// The text at `off` up to a NUL, `max` bytes or the record's end.
std::string_view text_at(std::span<const uint8_t> rec, size_t off, size_t max) {
  if (off >= rec.size()) return {};
  const char* p = reinterpret_cast<const char*>(rec.data() + off);
  const size_t n = std::min(max, rec.size() - off);
  const void* nul = std::memchr(p, '\0', n);
  return {p, nul ? static_cast<size_t>(static_cast<const char*>(nul) - p) : n};
}

struct DataLoc {
  size_t offset = 0;
  size_t len = 0;
};

// The u32 __data_loc at `off`; nullopt when the loc itself is out of range.
std::optional<DataLoc> data_loc(std::span<const uint8_t> rec, size_t off) {
  if (off > rec.size() || rec.size() - off < 4) return std::nullopt;
  const auto loc = static_cast<uint32_t>(read_le(rec, off, 4));
  return DataLoc{loc & 0xffff, loc >> 16};
}

void append_integer(std::string& out, const synth::SynthField& f, std::span<const uint8_t> rec, bool last,
                    const render::Options& opt) {
  const size_t size = (f.size == 1 || f.size == 2 || f.size == 4) ? f.size : 8;
  const uint64_t v = render::shown(read_le(rec, f.offset, size), table::address_kind(f.type), opt);
  const std::string_view sep = last ? "" : " ";
  if (f.type == "gfp_t") {
    // "%s=%x%s" and then " (flags)": the separator lands before the flags.
    fmt::format_to(std::back_inserter(out), "{}={:x}{} (", f.name, v, sep);
    if (v) fmt::format_to(std::back_inserter(out), "0x{:x}", v);
    out += ')';
    return;
  }
  // 1- and 2-byte values reach %d zero-extended (as_u8/as_u16 promoted to
  // int), so only 4- and 8-byte signed types print a sign.
  if (f.is_signed && size == 4) {
    fmt::format_to(std::back_inserter(out), "{}={}{}", f.name, static_cast<int32_t>(static_cast<uint32_t>(v)), sep);
  } else if (f.is_signed && size == 8) {
    fmt::format_to(std::back_inserter(out), "{}={}{}", f.name, static_cast<int64_t>(v), sep);
  } else {
    fmt::format_to(std::back_inserter(out), "{}={}{}", f.name, v, sep);
  }
}

void append_stack(std::string& out, const synth::SynthField& f, std::span<const uint8_t> rec,
                  const render::Resolver* resolver, const render::Options& opt) {
  out += f.name;
  out += "=STACK:\n";
  const auto loc = data_loc(rec, f.offset);
  if (!loc) return;
  // Element 0 holds the frame count; the kernel prints the rest, zeros too,
  // but not the leading frames of the BPF machinery (Resolver::is_tracing_frame).
  bool leading = true;
  for (size_t j = 1; j < loc->len / kStackEntry; ++j) {
    const size_t at = loc->offset + j * kStackEntry;
    if (at > rec.size() || rec.size() - at < kStackEntry) break;
    const uint64_t addr = read_le(rec, at, kStackEntry);
    if (leading && addr && resolver && resolver->is_tracing_frame(addr)) continue;
    leading = false;
    std::string sym = resolver ? resolver->symbol_offset(addr) : std::string();
    if (sym.empty()) sym = fmt::format("0x{:x}", render::shown(addr, table::AddressKind::Pointer, opt));
    out += "=> ";
    out += sym;
    out += '\n';
  }
}

}  // namespace

std::string snapshot_help(bool allocated) {
  return std::string(allocated ? "#\n# * Snapshot is allocated *\n#\n" : "#\n# * Snapshot is freed *\n#\n") +
         "# Snapshot commands:\n"
         "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
         "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
         "#                      Takes a snapshot of the main buffer.\n"
         "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
         "#                      (Doesn't have to be '2' works with any number that\n"
         "#                       is not a '0' or '1')\n";
}

std::string stack_trace_text(std::span<const uint64_t> frames, const render::Resolver* resolver,
                             const render::Options& options) {
  std::string out = "<stack trace>";
  bool leading = true;
  for (const uint64_t addr : frames) {
    if (addr == 0) break;  // bpf_get_stack() leaves the rest zero
    if (leading && resolver && resolver->is_tracing_frame(addr)) continue;
    leading = false;
    std::string sym = resolver ? resolver->symbol(addr) : std::string();
    sym = sym.substr(0, sym.find(' '));  // the name alone, without " [module]"
    if (sym.empty()) sym = fmt::format("0x{:08x}", render::shown(addr, table::AddressKind::Pointer, options));
    out += "\n => ";
    out += sym;
  }
  return out;
}

std::string synth_event_body(const synth::SynthDefinition& def, std::span<const uint8_t> record,
                             const render::Resolver* resolver, const render::Options& options) {
  std::string out;
  for (size_t i = 0; i < def.fields.size(); ++i) {
    const synth::SynthField& f = def.fields[i];
    const bool last = i + 1 == def.fields.size();
    switch (f.kind) {
      case synth::SynthField::Kind::Integer:
        append_integer(out, f, record, last, options);
        break;
      case synth::SynthField::Kind::StaticString:
        out += f.name;
        out += '=';
        out += text_at(record, f.offset, kStrVarLenMax);
        if (!last) out += ' ';
        break;
      case synth::SynthField::Kind::DynamicString: {
        out += f.name;
        out += '=';
        if (const auto loc = data_loc(record, f.offset)) {
          out += text_at(record, loc->offset, std::min(loc->len, kStrVarLenMax));
        }
        if (!last) out += ' ';
        break;
      }
      case synth::SynthField::Kind::Stack:
        append_stack(out, f, record, resolver, options);
        break;
    }
  }
  return out;
}

std::string format_line(const LineHeader& h, std::string_view event, std::string_view body) {
  std::string text(event);
  text += ": ";
  text += body;
  return format_line(h, text);
}

std::string format_line(const LineHeader& h, std::string_view text) {
  // The kernel rounds to the nearest microsecond (ns2usecs adds 500 first).
  const uint64_t usecs = (h.ts_ns + 500) / 1000;
  const std::string_view comm = h.comm.empty() ? std::string_view("<...>") : std::string_view(h.comm);
  // %16s pads by bytes; fmt would pad a UTF-8 comm by its display width.
  std::string out(comm.size() < 16 ? 16 - comm.size() : 0, ' ');
  out += comm;
  // The pid is an int in the kernel's entry; %d of it.
  fmt::format_to(std::back_inserter(out), "-{:<7} [{:03}] ..... {:5}.{:06}: {}\n", static_cast<int32_t>(h.pid), h.cpu,
                 usecs / 1000000, usecs % 1000000, text);
  return out;
}

TraceBuffer::TraceBuffer(size_t capacity_bytes, bool overwrite) : capacity_(capacity_bytes), overwrite_(overwrite) {}

void TraceBuffer::set_recording(bool on) {
  std::lock_guard lock(mu_);
  recording_ = on;
}

bool TraceBuffer::recording() const {
  std::lock_guard lock(mu_);
  return recording_;
}

void TraceBuffer::append(std::string line, std::string hidden, uint32_t cpu) {
  if (hidden == line) hidden.clear();
  {
    std::lock_guard lock(mu_);
    if (!recording_) return;
    push_locked(Line{std::move(line), std::move(hidden), true, cpu});
  }
  cv_.notify_all();
}

void TraceBuffer::note_lost(uint32_t cpu, uint64_t count) {
  {
    std::lock_guard lock(mu_);
    written_ += count;
    written_on_[cpu] += count;
    push_locked(Line{fmt::format("CPU:{} [LOST {} EVENTS]\n", cpu, count), {}, false, cpu});
  }
  cv_.notify_all();
}

void TraceBuffer::pop_front_locked() {
  bytes_ -= lines_.front().text.size();
  if (lines_.front().entry) --entries_;
  lines_.pop_front();
}

void TraceBuffer::push_locked(Line line) {
  if (line.entry) {
    ++written_;
    if (line.cpu != kAnyCpu) ++written_on_[line.cpu];
  }
  // A line larger than the whole buffer can never be stored; evicting
  // everything for it would lose data and still not make room.
  const size_t size = line.text.size();
  if (size > capacity_) {
    if (line.entry) ++overruns_;
    return;
  }
  if (overwrite_) {
    while (bytes_ + size > capacity_) {
      if (lines_.front().entry) ++overruns_;
      pop_front_locked();
    }
  } else if (bytes_ + size > capacity_) {
    if (line.entry) ++overruns_;
    return;
  }
  bytes_ += size;
  if (line.entry) ++entries_;
  lines_.push_back(std::move(line));
}

std::string TraceBuffer::contents(unsigned cpus, bool hide, uint32_t cpu) const {
  std::lock_guard lock(mu_);
  uint64_t entries = entries_, written = written_;
  if (cpu != kAnyCpu) {
    entries = static_cast<uint64_t>(
        std::count_if(lines_.begin(), lines_.end(), [&](const Line& l) { return l.entry && l.cpu == cpu; }));
    const auto it = written_on_.find(cpu);
    written = it == written_on_.end() ? 0 : it->second;
  }
  std::string out =
      fmt::format("# tracer: nop\n#\n# entries-in-buffer/entries-written: {}/{}   #P:{}\n#\n", entries, written, cpus);
  out.reserve(out.size() + kHelpHeader.size() + bytes_);
  out += kHelpHeader;
  for (const auto& l : lines_)
    if (cpu == kAnyCpu || l.cpu == cpu) out += l.as(hide);
  return out;
}

std::string TraceBuffer::lines(bool hide) const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(bytes_);
  for (const auto& l : lines_) out += l.as(hide);
  return out;
}

size_t TraceBuffer::capacity() const {
  std::lock_guard lock(mu_);
  return capacity_;
}

void TraceBuffer::resize(size_t capacity_bytes) {
  std::lock_guard lock(mu_);
  capacity_ = capacity_bytes;
  while (bytes_ > capacity_ && !lines_.empty()) {
    if (lines_.front().entry) ++overruns_;
    pop_front_locked();
  }
}

void TraceBuffer::clear() {
  std::lock_guard lock(mu_);
  lines_.clear();
  entries_ = 0;
  bytes_ = 0;
  written_ = 0;
  overruns_ = 0;
  written_on_.clear();
}

void TraceBuffer::swap(TraceBuffer& other) {
  if (&other == this) return;
  {
    std::scoped_lock lock(mu_, other.mu_);
    lines_.swap(other.lines_);
    std::swap(entries_, other.entries_);
    std::swap(bytes_, other.bytes_);
    std::swap(written_, other.written_);
    std::swap(overruns_, other.overruns_);
    written_on_.swap(other.written_on_);
  }
  // A trace_pipe reader waiting on an empty buffer may now have lines.
  cv_.notify_all();
  other.cv_.notify_all();
}

std::optional<std::string> TraceBuffer::consume(std::chrono::milliseconds timeout, size_t max_bytes, bool hide,
                                                uint32_t cpu) {
  std::unique_lock lock(mu_);
  if (cpu != kAnyCpu) return consume_cpu_locked(max_bytes, hide, cpu);
  if (!cv_.wait_for(lock, timeout, [this] { return !lines_.empty(); })) return std::nullopt;
  std::string out;
  do {
    out += lines_.front().as(hide);
    pop_front_locked();
  } while (!lines_.empty() && out.size() + lines_.front().as(hide).size() <= max_bytes);
  return out;
}

// One CPU's lines taken out from among the others', oldest first, as
// the kernel's per-CPU trace_pipe consumes that CPU's events only.
std::optional<std::string> TraceBuffer::consume_cpu_locked(size_t max_bytes, bool hide, uint32_t cpu) {
  std::string out;
  std::deque<Line> kept;
  bool took = false, full = false;
  while (!lines_.empty()) {
    Line& l = lines_.front();
    if (l.cpu == cpu && took && out.size() + l.as(hide).size() > max_bytes) full = true;
    if (l.cpu == cpu && !full) {
      out += l.as(hide);
      took = true;
      bytes_ -= l.text.size();
      if (l.entry) --entries_;
    } else {
      kept.push_back(std::move(l));
    }
    lines_.pop_front();
  }
  lines_.swap(kept);
  if (!took) return std::nullopt;
  return out;
}

uint64_t TraceBuffer::entries() const {
  std::lock_guard lock(mu_);
  return entries_;
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
