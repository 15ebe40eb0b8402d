// SPDX-License-Identifier: GPL-2.0-only
// The trace ring: what reaches histd from the programs (trace lines of
// enabled synthetic events, recorded events, snapshot() notices), the trace
// and snapshot buffers it feeds, and trace_marker's line.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "deploy/control_words.h"
#include "deploy/ring_passes.h"
#include "hist_shared.h"
#include "histd/probe.h"
#include "histd/trace_ring.h"

namespace histd::deploy {

namespace {

uint64_t monotonic_ns() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

// Ring notices handled per hold of the engine lock (see consume()).
constexpr size_t kNoticesPerLock = 256;
// The longest a reader of trace or snapshot waits for the ring's consumer.
constexpr std::chrono::milliseconds kReadWait{1000};

// Whether a batch holds a notice printed with the kernel's symbols: a stack,
// or a synthetic event's record when one traced has a stack field.
bool names_symbols(const std::vector<std::vector<uint8_t>>& batch, bool synth_stacks) {
  return std::any_of(batch.begin(), batch.end(), [&](const std::vector<uint8_t>& notice) {
    if (notice.size() < sizeof(histd_notice)) return false;
    histd_notice n;
    std::memcpy(&n, notice.data(), sizeof(n));
    switch (n.kind) {
      case HISTD_NOTICE_STACK:
        return true;
      case HISTD_NOTICE_SNAPSHOT:
      case HISTD_NOTICE_SNAPSHOT_TRIGGER:
      case HISTD_NOTICE_RECORD:
        return false;
      default:
        return synth_stacks;
    }
  });
}

}  // namespace

std::shared_ptr<const printfmt::Enums> KernelNames::enums() const {
  std::call_once(enums_read_, [this] { enums_ = std::make_shared<const printfmt::Enums>(printfmt::kernel_enums()); });
  return enums_;
}

TraceRing::TraceRing(MakeRing make_ring, Fd lost, int control, uint32_t possible_cpus, size_t buffer_size,
                     std::shared_ptr<trace::Cmdlines> cmdlines, std::shared_ptr<const KernelNames> names,
                     Notices notices)
    : make_ring_(std::move(make_ring)),
      lost_(std::move(lost)),
      control_(control),
      possible_cpus_(possible_cpus),
      names_(std::move(names)),
      resolver_(names_->resolver()),
      notices_(std::move(notices)),
      cmdlines_(std::move(cmdlines)),
      trace_(buffer_size, true),
      snapshot_(buffer_size, true),
      passes_(std::make_unique<RingPasses>()) {
  for (uint32_t cpu = 0; cpu < possible_cpus_; ++cpu) raw_.push_back(std::make_unique<trace::RawBuffer>(buffer_size));
}

TraceRing::~TraceRing() { stop_consumer(); }

Expected<int> TraceRing::ring_fd() {
  std::lock_guard hold(ring_mu_);
  if (!ring_) {
    auto ring = make_ring_();
    if (!ring) return unexpected(std::move(ring).error());
    ring_ = std::move(*ring);
    launch_locked();
  }
  return ring_.get();
}

bool TraceRing::has_ring() const {
  std::lock_guard hold(ring_mu_);
  return static_cast<bool>(ring_);
}

uint64_t TraceRing::buffer_size_kb() const { return (raw_.empty() ? trace_.capacity() : raw_[0]->capacity()) / 1024; }

Status TraceRing::set_buffer_size_kb(uint64_t kb) {
  if (kb == 0) return unexpected(Error{ErrorKind::Invalid, EINVAL, "a buffer of 0 KiB"});
  if (kb > kMaxBufferKb)
    return unexpected(Error{ErrorKind::Invalid, ENOMEM, fmt::format("at most {} KiB a CPU", kMaxBufferKb)});
  const size_t bytes = static_cast<size_t>(kb) << 10;
  trace_.resize(bytes);
  snapshot_.resize(bytes);
  for (auto& raw : raw_) raw->resize(bytes);
  return ok_status();
}

std::string TraceRing::read_trace(bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  return trace_.contents(possible_cpus_, hide_kernel_addresses);
}

// tracing_on is a control slot: traceon/traceoff triggers flip it from BPF,
// and the programs send no record, trace line or stack while it is off.
bool TraceRing::tracing_on() const { return !slot_paused(control_, HISTD_TRACING_SLOT); }

void TraceRing::set_tracing_on(bool on) { (void)set_slot_paused(control_, HISTD_TRACING_SLOT, !on); }

bool TraceRing::stacktrace_option() const { return !slot_paused(control_, HISTD_STACKTRACE_OPTION_SLOT); }

void TraceRing::set_stacktrace_option(bool on) { (void)set_slot_paused(control_, HISTD_STACKTRACE_OPTION_SLOT, !on); }

void TraceRing::clear_trace() {
  passes_->await_pass(kReadWait);
  trace_.clear();
  for (auto& raw : raw_) raw->clear();
}

std::string TraceRing::read_trace_cpu(uint32_t cpu, bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  return trace_.contents(possible_cpus_, hide_kernel_addresses, cpu);
}

std::optional<std::string> TraceRing::consume_trace_cpu(uint32_t cpu, size_t max_bytes, bool hide_kernel_addresses) {
  return trace_.consume(std::chrono::milliseconds(0), max_bytes, hide_kernel_addresses, cpu);
}

std::optional<std::string> TraceRing::take_raw_page(uint32_t cpu, bool settled) {
  if (cpu >= raw_.size()) return std::nullopt;
  if (auto page = raw_[cpu]->take_page(); page || !settled) return page;
  passes_->await_pass(kReadWait);
  return raw_[cpu]->take_page();
}

bool TraceRing::raw_empty(uint32_t cpu) const { return cpu >= raw_.size() || raw_[cpu]->empty(); }

std::optional<std::string> TraceRing::take_full_raw_page(uint32_t cpu) {
  if (cpu >= raw_.size()) return std::nullopt;
  return raw_[cpu]->take_page(true);
}

bool TraceRing::raw_has_full_page(uint32_t cpu) const { return cpu < raw_.size() && raw_[cpu]->has_full_page(); }

trace::RawStats TraceRing::raw_stats(uint32_t cpu) const {
  return cpu < raw_.size() ? raw_[cpu]->stats() : trace::RawStats{};
}

std::optional<std::string> TraceRing::consume_trace(std::chrono::milliseconds timeout, size_t max_bytes,
                                                    bool hide_kernel_addresses) {
  return trace_.consume(timeout, max_bytes, hide_kernel_addresses);
}

std::string TraceRing::read_snapshot(bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  // An empty snapshot shows its commands, as the kernel's s_show() does.
  if (snapshot_.entries() == 0 && snapshot_.lines().empty())
    return "# tracer: nop\n#\n" + trace::snapshot_help(snapshot_allocated_);
  return snapshot_.contents(possible_cpus_, hide_kernel_addresses);
}

void TraceRing::clear_snapshot() {
  passes_->await_pass(kReadWait);
  snapshot_.clear();
}

void TraceRing::free_snapshot() {
  clear_snapshot();
  snapshot_allocated_ = false;
}

void TraceRing::take_snapshot_now() {
  passes_->await_pass(kReadWait);
  trace_.swap(snapshot_);
  snapshot_allocated_ = true;
}

void TraceRing::write_snapshot(uint64_t value) {
  if (value == 0)
    free_snapshot();
  else if (value == 1)
    take_snapshot_now();
  else
    clear_snapshot();
}

void TraceRing::deliver(std::span<const uint8_t> notice) {
  if (notice.size() < sizeof(histd_notice)) return;
  histd_notice n;
  std::memcpy(&n, notice.data(), sizeof(n));
  const std::span<const uint8_t> rec = notice.subspan(sizeof(n), std::min<size_t>(n.size, notice.size() - sizeof(n)));
  const trace::LineHeader header{std::string(n.comm, strnlen(n.comm, sizeof(n.comm))), 0, n.cpu, n.ts};
  switch (n.kind) {
    case HISTD_NOTICE_SNAPSHOT:
      return deliver_snapshot(n.id, rec);
    case HISTD_NOTICE_SNAPSHOT_TRIGGER:
      trace_.swap(snapshot_);
      snapshot_allocated_ = true;
      return;
    case HISTD_NOTICE_STACK:  // the notice's id is the task's pid
      return deliver_stack(header, static_cast<uint32_t>(n.id), rec);
    case HISTD_NOTICE_RECORD:
      return deliver_record(header, rec);
    default:
      return deliver_synth(header, n.id, rec);
  }
}

void TraceRing::deliver_snapshot(uint64_t id, std::span<const uint8_t> rec) {
  if (rec.size() < 8) return;
  uint64_t value = 0;
  std::memcpy(&value, rec.data(), 8);
  // As the kernel's update_max_tr(), a snapshot swaps the live buffer
  // with the snapshot buffer: O(1) under the engine lock whatever the
  // buffers hold (copying a full buffer here, on every change, once held
  // the lock for minutes).
  if (notices_.snapshot(id, value, rec.subspan(8))) {
    trace_.swap(snapshot_);
    snapshot_allocated_ = true;
  }
}

// The stack of the task that hit the event.
void TraceRing::deliver_stack(trace::LineHeader header, uint32_t pid, std::span<const uint8_t> rec) {
  std::vector<uint64_t> frames(rec.size() / 8);
  if (!frames.empty()) std::memcpy(frames.data(), rec.data(), frames.size() * 8);
  header.pid = pid;
  trace_.append(
      trace::format_line(header, trace::stack_trace_text(frames, &resolver_)),
      trace::format_line(header, trace::stack_trace_text(frames, &resolver_, {.hide_kernel_addresses = true})),
      header.cpu);
}

// A recorded kernel event's record, printed by its format.
void TraceRing::deliver_record(trace::LineHeader header, std::span<const uint8_t> rec) {
  if (header.cpu < raw_.size()) raw_[header.cpu]->append(header.ts_ns, rec);
  int32_t pid = 0;
  if (rec.size() >= 8) std::memcpy(&pid, rec.data() + 4, 4);
  header.pid = uint32_t(pid);
  cmdlines_->save(header.pid, header.comm);
  if (!printer_) return;
  auto text = printer_->line_text(rec);
  if (!text) return;
  auto hidden = printer_->line_text(rec, true);
  trace_.append(trace::format_line(header, *text), trace::format_line(header, hidden ? *hidden : *text), header.cpu);
}

// A synthetic event's record. The generating program already ran the
// event's triggers: a record comes here only to be traced; with tracing_on
// 0 the generating program sent none (histd_synth_trace).
void TraceRing::deliver_synth(trace::LineHeader header, uint64_t id, std::span<const uint8_t> rec) {
  const synth::SynthDefinition* def = notices_.traced_synth(id);
  if (!def) return;
  int32_t pid = 0;
  if (rec.size() >= 8) std::memcpy(&pid, rec.data() + 4, 4);
  header.pid = uint32_t(pid);
  cmdlines_->save(header.pid, header.comm);
  if (header.cpu < raw_.size()) raw_[header.cpu]->append(header.ts_ns, rec);
  // Both forms are made now, for readers who may see kernel addresses and
  // for those who may not: the record is gone once read.
  trace_.append(trace::format_line(header, def->name, trace::synth_event_body(*def, rec, &resolver_)),
                trace::format_line(header, def->name,
                                   trace::synth_event_body(*def, rec, &resolver_, {.hide_kernel_addresses = true})),
                header.cpu);
}

std::vector<uint64_t> TraceRing::lost_per_cpu(uint32_t slot) const {
  // A per-CPU array hands over one 8-byte value per possible CPU.
  std::vector<uint64_t> counts(possible_cpus_);
  if (bpf_map_lookup_elem(lost_.get(), &slot, counts.data()) != 0) return {};
  return counts;
}

RingLost TraceRing::ring_lost() const {
  RingLost r;
  for (uint64_t n : lost_per_cpu(HISTD_LOST_TRACE)) r.trace_records += n;
  for (uint64_t n : lost_per_cpu(HISTD_LOST_SNAPSHOT)) r.snapshot_notices += n;
  return r;
}

// Lost trace lines are reported where the reader meets them, as tracefs
// reports the events its ring lost: a "CPU:N [LOST M EVENTS]" line, after
// the lines that were in the ring when it filled.
void TraceRing::note_lost_lines(std::vector<uint64_t>& seen) {
  const std::vector<uint64_t> now = lost_per_cpu(HISTD_LOST_TRACE);
  if (now.size() != seen.size()) return;
  for (uint32_t cpu = 0; cpu < now.size(); ++cpu) {
    if (now[cpu] > seen[cpu]) {
      trace_.note_lost(cpu, now[cpu] - seen[cpu]);
      if (cpu < raw_.size()) raw_[cpu]->note_dropped(now[cpu] - seen[cpu]);
    }
    seen[cpu] = now[cpu];
  }
}

void TraceRing::read_kernel_names() const {
  (void)resolver_.kallsyms();
  (void)names_->enums();
}

Status TraceRing::learn_format(const catalog::Catalog& catalog, const std::string& system, const std::string& event) {
  if (!printer_) {
    // Symbols for %pS, the kernel's enum constants, and the strings events
    // record by address, as the kernel's own trace has them.
    auto printer = std::make_unique<printfmt::Printer>(&resolver_.kallsyms(), names_->enums());
    std::ifstream in(catalog.root() / "printk_formats");
    std::stringstream text;
    text << in.rdbuf();
    (void)printer->add_printk_formats(text.str());  // without it, such strings print as addresses
    printer_ = std::move(printer);
  }
  auto format = catalog.event(system, event);
  if (!format) return unexpected(std::move(format).error());
  if (printer_->knows((*format)->id)) return ok_status();
  const catalog::EventFormat& f = **format;
  return printer_->add_event(system, f.text, f.probe && f.probe->eprobe ? probe::trace_prefix(*f.probe) : "");
}

TraceRing::Marker TraceRing::mark(std::string_view text, uint32_t pid, const std::string& comm) {
  std::string body(text);
  if (!body.empty() && body.back() == '\n') body.pop_back();
  const uint64_t ts = monotonic_ns();
  const int cpu = sched_getcpu();
  const uint32_t on = cpu < 0 ? 0u : uint32_t(cpu);
  cmdlines_->save(pid, comm);
  trace_.append(trace::format_line(trace::LineHeader{comm, pid, on, ts}, "tracing_mark_write", body), {}, on);
  return Marker{std::move(body), ts};
}

void TraceRing::start_consumer(std::mutex& lock) {
  std::lock_guard hold(ring_mu_);
  consumer_lock_ = &lock;
  launch_locked();
}

void TraceRing::launch_locked() {
  if (consumer_.joinable() || !consumer_lock_ || !ring_ || stop_consumer_) return;
  // Readers wait for its first pass from now on, not from when it runs.
  // Without a ring no record can come: they wait for nothing.
  passes_->running(true);
  consumer_ = std::thread([this, &lock = *consumer_lock_] { consume(lock); });
}

void TraceRing::stop_consumer() {
  std::thread consumer;
  {
    std::lock_guard hold(ring_mu_);
    stop_consumer_ = true;
    consumer = std::move(consumer_);
  }
  passes_->interrupt();
  if (consumer.joinable()) consumer.join();
}

void TraceRing::consume(std::mutex& lock) {
  const std::atomic<bool>& stop = stop_consumer_;
  std::vector<std::vector<uint8_t>> batch;
  auto on_notice = [](void* ctx, void* data, size_t size) -> int {
    auto* b = static_cast<std::vector<std::vector<uint8_t>>*>(ctx);
    const auto* p = static_cast<const uint8_t*>(data);
    b->emplace_back(p, p + size);
    return 0;
  };
  // The ring is mapped only once it holds a record: libbpf maps its data
  // pages twice (a record may wrap), so a mapped 4 MiB ring is 8 MiB of
  // histd's resident size, and most histd never receive a record (plain
  // hist triggers send none). Until then the map's own fd is polled: the
  // kernel reports it readable while the ring holds data.
  ring_buffer* rb = nullptr;
  // Losses before the consumer started (a deferred start) are reported too.
  std::vector<uint64_t> seen(possible_cpus_, 0);
  // The ring (its map fd, then libbpf's epoll fd) is readable while it
  // holds records; the passes' eventfd when a reader waits for one
  // (RingPasses) or the consumer is to stop. Nothing else wakes it: an
  // idle histd has no timer (a lost record needs a full ring, which is
  // readable).
  pollfd fds[2] = {{ring_.get(), POLLIN, 0}, {passes_->wake_fd(), POLLIN, 0}};
  bool broken = false;
  while (!stop && !broken) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    // Any event on the map's fd maps the ring: POLLIN as expected, and an
    // error too (poll would report it again at once, forever).
    if (!rb && fds[0].revents != 0) {
      rb = ring_buffer__new(ring_.get(), on_notice, &batch, nullptr);
      if (!rb) break;
      fds[0].fd = ring_buffer__epoll_fd(rb);
    }
    const uint64_t serving = passes_->begin();
    const int n = rb ? ring_buffer__consume(rb) : 0;
    broken = n < 0 && n != -EINTR;
    // The first notice that names kernel addresses reads /proc/kallsyms
    // (a tenth of a second, seconds under a sanitizer): here, before the
    // lock, not in a chunk that every trigger write and table read waits for.
    if (!resolver_.has_symbols() && names_symbols(batch, synth_stacks_)) (void)resolver_.kallsyms();
    // A pass drains the whole ring (4 MiB: tens of thousands of notices).
    // The lock that trigger writes and reads take is held for one chunk at
    // a time, so they wait for at most one chunk's work, and a shutdown
    // for at most one chunk too.
    for (size_t done = 0; done < batch.size() && !stop; done += kNoticesPerLock) {
      std::lock_guard hold(lock);
      const size_t end = std::min(batch.size(), done + kNoticesPerLock);
      for (size_t i = done; i < end; ++i) deliver(batch[i]);
      delivered_ += end - done;
    }
    batch.clear();
    note_lost_lines(seen);
    passes_->end(serving);
  }
  passes_->running(false);
  if (rb) ring_buffer__free(rb);
}

}  // namespace histd::deploy
