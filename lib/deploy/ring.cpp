// SPDX-License-Identifier: GPL-2.0-only
// The ring: what reaches histd from the programs (trace lines of enabled
// synthetic events, snapshot() notices), the trace and snapshot buffers it
// feeds, and trace_marker's line and record.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "deploy/ring_passes.h"
#include "deploy/state.h"
#include "hist_shared.h"

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

}  // namespace

std::string Deployer::read_trace(bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  return trace_.contents(possible_cpus_, hide_kernel_addresses);
}

// tracing_on is a control slot: traceon/traceoff triggers flip it from BPF,
// and the programs send no record, trace line or stack while it is off.
bool Deployer::tracing_on() const { return !is_paused(HISTD_TRACING_SLOT); }

void Deployer::set_tracing_on(bool on) { (void)set_paused(HISTD_TRACING_SLOT, !on); }

bool Deployer::stacktrace_option() const { return !is_paused(HISTD_STACKTRACE_OPTION_SLOT); }

void Deployer::set_stacktrace_option(bool on) { (void)set_paused(HISTD_STACKTRACE_OPTION_SLOT, !on); }

void Deployer::clear_trace() {
  passes_->await_pass(kReadWait);
  trace_.clear();
}

std::optional<std::string> Deployer::consume_trace(std::chrono::milliseconds timeout, size_t max_bytes,
                                                   bool hide_kernel_addresses) {
  return trace_.consume(timeout, max_bytes, hide_kernel_addresses);
}

std::string Deployer::read_snapshot(bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  // An empty snapshot shows its commands, as the kernel's s_show() does.
  if (snapshot_.entries() == 0 && snapshot_.lines().empty())
    return "# tracer: nop\n#\n" + trace::snapshot_help(snapshot_allocated_);
  return snapshot_.contents(possible_cpus_, hide_kernel_addresses);
}

void Deployer::clear_snapshot() {
  passes_->await_pass(kReadWait);
  snapshot_.clear();
}

void Deployer::free_snapshot() {
  clear_snapshot();
  snapshot_allocated_ = false;
}

void Deployer::take_snapshot_now() {
  passes_->await_pass(kReadWait);
  trace_.swap(snapshot_);
  snapshot_allocated_ = true;
}

// The kernel's conditional snapshot: onmax() takes one when its value beats
// the trigger's global maximum, onchange() on every change. As the kernel's
// update_max_tr(), it swaps the live buffer with the snapshot buffer: O(1)
// under the engine lock whatever the buffers hold (copying a full buffer
// here, on every change, once held the lock for minutes).
void Deployer::take_snapshot(Trigger& t, uint64_t value, std::span<const uint8_t> key) {
  bool onmax = false;
  for (const plan::ActionPlan& a : t.plan.actions)
    if (a.kind == parse::Action::Kind::Snapshot) onmax = a.handler == parse::Action::Handler::OnMax;
  if (onmax && t.snapshot && value <= t.snapshot->value) return;
  t.snapshot = Trigger::Snapshot{value, std::vector<uint8_t>(key.begin(), key.end())};
  trace_.swap(snapshot_);
  snapshot_allocated_ = true;
}

void Deployer::deliver(std::span<const uint8_t> notice) {
  if (notice.size() < sizeof(histd_notice)) return;
  histd_notice n;
  std::memcpy(&n, notice.data(), sizeof(n));
  const std::span<const uint8_t> rec = notice.subspan(sizeof(n), std::min<size_t>(n.size, notice.size() - sizeof(n)));
  if (n.kind == HISTD_NOTICE_SNAPSHOT) {
    if (rec.size() < 8) return;
    uint64_t value = 0;
    std::memcpy(&value, rec.data(), 8);
    for (auto& [id, ev] : events_)
      for (auto& t : ev->triggers)
        if (t->slot == n.id) take_snapshot(*t, value, rec.subspan(8));
    return;
  }
  const trace::LineHeader header{std::string(n.comm, strnlen(n.comm, sizeof(n.comm))), 0, n.cpu, n.ts};
  if (n.kind == HISTD_NOTICE_SNAPSHOT_TRIGGER) {
    trace_.swap(snapshot_);
    snapshot_allocated_ = true;
    return;
  }
  if (n.kind == HISTD_NOTICE_STACK) {
    // The stack of the task that hit the event (the notice's id is its pid).
    std::vector<uint64_t> frames(rec.size() / 8);
    std::memcpy(frames.data(), rec.data(), frames.size() * 8);
    trace::LineHeader h = header;
    h.pid = n.id;
    trace_.append(trace::format_line(h, trace::stack_trace_text(frames, &resolver_)),
                  trace::format_line(h, trace::stack_trace_text(frames, &resolver_, {.hide_kernel_addresses = true})));
    return;
  }
  if (n.kind == HISTD_NOTICE_RECORD) {
    if (!printer_) return;
    auto text = printer_->line_text(rec);
    if (!text) return;
    auto hidden = printer_->line_text(rec, true);
    int32_t pid = 0;
    if (rec.size() >= 8) std::memcpy(&pid, rec.data() + 4, 4);
    trace::LineHeader h = header;
    h.pid = uint32_t(pid);
    trace_.append(trace::format_line(h, *text), trace::format_line(h, hidden ? *hidden : *text));
    return;
  }
  auto found = std::find_if(synths_.begin(), synths_.end(), [&](const auto& e) { return e.second->id == n.id; });
  if (found == synths_.end()) return;
  // The generating program already ran the event's triggers: a record comes
  // here only to be traced.
  const SynthState* s = found->second.get();
  // With tracing_on 0 the generating program sent none (histd_synth_trace).
  if (s->enabled) {
    int32_t pid = 0;
    if (rec.size() >= 8) std::memcpy(&pid, rec.data() + 4, 4);
    trace::LineHeader h = header;
    h.pid = uint32_t(pid);
    // Both forms are made now, for readers who may see kernel addresses and
    // for those who may not: the record is gone once read.
    trace_.append(
        trace::format_line(h, s->def.name, trace::synth_event_body(s->def, rec, &resolver_)),
        trace::format_line(h, s->def.name,
                           trace::synth_event_body(s->def, rec, &resolver_, {.hide_kernel_addresses = true})));
  }
}

std::vector<uint64_t> Deployer::lost_per_cpu(uint32_t slot) const {
  // A per-CPU array hands over one 8-byte value per possible CPU.
  std::vector<uint64_t> counts(possible_cpus_);
  if (bpf_map_lookup_elem(lost_.get(), &slot, counts.data()) != 0) return {};
  return counts;
}

RingLost Deployer::ring_lost() const {
  RingLost r;
  for (uint64_t n : lost_per_cpu(HISTD_LOST_TRACE)) r.trace_records += n;
  for (uint64_t n : lost_per_cpu(HISTD_LOST_SNAPSHOT)) r.snapshot_notices += n;
  return r;
}

// Lost trace lines are reported where the reader meets them, as tracefs
// reports the events its ring lost: a "CPU:N [LOST M EVENTS]" line, after
// the lines that were in the ring when it filled.
void Deployer::note_lost_lines(std::vector<uint64_t>& seen) {
  const std::vector<uint64_t> now = lost_per_cpu(HISTD_LOST_TRACE);
  if (now.size() != seen.size()) return;
  for (uint32_t cpu = 0; cpu < now.size(); ++cpu) {
    if (now[cpu] > seen[cpu]) trace_.note_lost(cpu, now[cpu] - seen[cpu]);
    seen[cpu] = now[cpu];
  }
}

Status Deployer::learn_format(const EventState& ev) {
  if (!printer_) {
    // Symbols for %pS, the kernel's enum constants, and the strings events
    // record by address, as the kernel's own trace has them.
    auto printer = std::make_unique<printfmt::Printer>(&resolver_.kallsyms(), printfmt::kernel_enums());
    std::ifstream in(catalog_.root() / "printk_formats");
    std::stringstream text;
    text << in.rdbuf();
    (void)printer->add_printk_formats(text.str());  // without it, such strings print as addresses
    printer_ = std::move(printer);
  }
  auto format = catalog_.event(ev.system, ev.event);
  if (!format) return unexpected(std::move(format).error());
  if (printer_->knows((*format)->id)) return ok_status();
  const catalog::EventFormat& f = **format;
  return printer_->add_event(ev.system, f.text, f.probe && f.probe->eprobe ? probe::trace_prefix(*f.probe) : "");
}

Status Deployer::write_marker(std::string_view text, uint32_t pid, const std::string& comm) {
  // As the kernel, whose marker is an event in a ring that is not
  // recording: no line, no ftrace:print for its triggers, EBADF.
  if (!tracing_on()) return fail(ErrorKind::Invalid, EBADF, "tracing is off (tracing_on is 0)");
  std::string body(text);
  if (!body.empty() && body.back() == '\n') body.pop_back();
  const uint64_t ts = monotonic_ns();
  const int cpu = sched_getcpu();
  trace_.append(
      trace::format_line(trace::LineHeader{comm, pid, cpu < 0 ? 0u : uint32_t(cpu), ts}, "tracing_mark_write", body));
  // ftrace:print, as the kernel records a marker: ip, then the text (its
  // newline dropped), NUL-padded so that a string read never runs past it.
  const EventState* ev = find_event(catalog::EventId{catalog::kMarkerSystem, catalog::kMarkerEvent});
  if (!ev || test_fds(*ev).empty()) return ok_status();
  auto format = catalog_.event(catalog::kMarkerSystem, catalog::kMarkerEvent);
  if (!format) return ok_status();
  std::vector<uint8_t> rec(16 + 256 + 8, 0);
  const uint16_t type = static_cast<uint16_t>((*format)->id);
  const int32_t spid = static_cast<int32_t>(pid);
  std::memcpy(rec.data(), &type, 2);
  std::memcpy(rec.data() + 4, &spid, 4);
  std::memcpy(rec.data() + 16, body.data(), std::min<size_t>(body.size(), 255));
  char task[16] = {};
  std::memcpy(task, comm.data(), std::min<size_t>(comm.size(), 15));
  for (int fd : test_fds(*ev))
    if (auto rc = runtime::test_run(fd, rec, ts, task); !rc) return unexpected(std::move(rc).error());
  return ok_status();
}

void Deployer::start_consumer(std::mutex& lock) {
  if (consumer_.joinable()) return;
  // Readers wait for its first pass from now on, not from when it runs.
  passes_->running(true);
  consumer_ = std::thread([this, &lock] { consume(lock); });
}

void Deployer::stop_consumer() {
  stop_consumer_ = true;
  passes_->interrupt();
  if (consumer_.joinable()) consumer_.join();
}

void Deployer::consume(std::mutex& lock) {
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
