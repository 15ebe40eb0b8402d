// The trace buffer's side of the engine: what reaches histd through the ring
// (trace lines of enabled synthetic events, snapshot() notices), and the
// trace and snapshot files.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "engine/deployer.h"
#include "engine/ring_passes.h"
#include "hist_shared.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

// Ring notices handled per hold of the engine lock (see consume_ring()).
constexpr size_t kNoticesPerLock = 256;
// The longest a reader of trace or snapshot waits for the ring's consumer.
constexpr std::chrono::milliseconds kReadWait{1000};

}  // namespace

std::string Engine::read_trace(bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  return trace_.contents(static_cast<unsigned>(std::max(libbpf_num_possible_cpus(), 1)), hide_kernel_addresses);
}

bool Engine::tracing_on() const { return trace_.recording(); }

void Engine::set_tracing_on(bool on) { trace_.set_recording(on); }

void Engine::clear_trace() {
  passes_->await_pass(kReadWait);
  trace_.clear();
}

std::optional<std::string> Engine::consume_trace(std::chrono::milliseconds timeout, size_t max_bytes,
                                                 bool hide_kernel_addresses) {
  return trace_.consume(timeout, max_bytes, hide_kernel_addresses);
}

std::string Engine::read_snapshot(bool hide_kernel_addresses) {
  passes_->await_pass(kReadWait);
  return snapshot_.contents(static_cast<unsigned>(std::max(libbpf_num_possible_cpus(), 1)), hide_kernel_addresses);
}

void Engine::clear_snapshot() {
  passes_->await_pass(kReadWait);
  snapshot_.clear();
}

// The kernel's conditional snapshot: onmax() takes one when its value beats
// the trigger's global maximum, onchange() on every change. As the kernel's
// update_max_tr(), it swaps the live buffer with the snapshot buffer: O(1)
// under the engine lock whatever the buffers hold (copying a full buffer
// here, on every change, once held the lock for minutes).
void Engine::take_snapshot(Trigger& t, uint64_t value, std::span<const uint8_t> key) {
  bool onmax = false;
  for (const plan::ActionPlan& a : t.plan.actions)
    if (a.kind == parse::Action::Kind::Snapshot) onmax = a.handler == parse::Action::Handler::OnMax;
  if (onmax && t.snapshot && value <= t.snapshot->value) return;
  t.snapshot = Trigger::Snapshot{value, std::vector<uint8_t>(key.begin(), key.end())};
  trace_.swap(snapshot_);
}

void Engine::deliver(std::span<const uint8_t> notice) {
  if (notice.size() < sizeof(histd_notice)) return;
  histd_notice n;
  std::memcpy(&n, notice.data(), sizeof(n));
  const std::span<const uint8_t> rec =
      notice.subspan(sizeof(n), std::min<size_t>(n.size, notice.size() - sizeof(n)));
  if (n.kind == HISTD_NOTICE_SNAPSHOT) {
    if (rec.size() < 8) return;
    uint64_t value = 0;
    std::memcpy(&value, rec.data(), 8);
    for (auto& [id, ev] : deployer_->events())
      for (auto& t : ev->triggers)
        if (t->slot == n.id) take_snapshot(*t, value, rec.subspan(8));
    return;
  }
  auto found = std::find_if(deployer_->synths().begin(), deployer_->synths().end(), [&](const auto& e) { return e.second.id == n.id; });
  if (found == deployer_->synths().end()) return;
  // The generating program already ran the event's triggers: a record comes
  // here only to be traced.
  const SynthState* s = &found->second;
  // With tracing_on 0 the lines would only be dropped: not made at all.
  if (s->enabled && trace_.recording()) {
    int32_t pid = 0;
    if (rec.size() >= 8) std::memcpy(&pid, rec.data() + 4, 4);
    const std::string comm(n.comm, strnlen(n.comm, sizeof(n.comm)));
    const trace::LineHeader header{comm, uint32_t(pid), n.cpu, n.ts};
    // Both forms are made now, for readers who may see kernel addresses and
    // for those who may not: the record is gone once read.
    trace_.append(
        trace::format_line(header, s->def.name, trace::synth_event_body(s->def, rec, &resolver_)),
        trace::format_line(header, s->def.name,
                           trace::synth_event_body(s->def, rec, &resolver_, {.hide_kernel_addresses = true})));
  }
}

std::vector<uint64_t> Engine::lost_per_cpu(uint32_t slot) const {
  // A per-CPU array hands over one 8-byte value per possible CPU.
  std::vector<uint64_t> counts(possible_cpus_);
  if (bpf_map_lookup_elem(deployer_->lost(), &slot, counts.data()) != 0) return {};
  return counts;
}

RingLost Engine::ring_lost() const {
  RingLost r;
  for (uint64_t n : lost_per_cpu(HISTD_LOST_TRACE)) r.trace_records += n;
  for (uint64_t n : lost_per_cpu(HISTD_LOST_SNAPSHOT)) r.snapshot_notices += n;
  return r;
}

// Lost trace lines are reported where the reader meets them, as tracefs
// reports the events its ring lost: a "CPU:N [LOST M EVENTS]" line, after
// the lines that were in the ring when it filled.
void Engine::note_lost_lines(std::vector<uint64_t>& seen) {
  const std::vector<uint64_t> now = lost_per_cpu(HISTD_LOST_TRACE);
  if (now.size() != seen.size()) return;
  for (uint32_t cpu = 0; cpu < now.size(); ++cpu) {
    if (now[cpu] > seen[cpu]) trace_.note_lost(cpu, now[cpu] - seen[cpu]);
    seen[cpu] = now[cpu];
  }
}

void Engine::consume_ring() {
  std::vector<std::vector<uint8_t>> batch;
  auto on_notice = [](void* ctx, void* data, size_t size) -> int {
    auto* b = static_cast<std::vector<std::vector<uint8_t>>*>(ctx);
    const auto* p = static_cast<const uint8_t*>(data);
    b->emplace_back(p, p + size);
    return 0;
  };
  ring_buffer* rb = ring_buffer__new(deployer_->ring(), on_notice, &batch, nullptr);
  if (!rb) {
    passes_->running(false);
    return;
  }
  // Losses before the consumer started (a deferred start) are reported too.
  std::vector<uint64_t> seen(possible_cpus_, 0);
  // The ring's epoll fd is readable while the ring holds records; the
  // passes' eventfd when a reader waits for one (RingPasses).
  pollfd fds[2] = {{ring_buffer__epoll_fd(rb), POLLIN, 0}, {passes_->wake_fd(), POLLIN, 0}};
  while (!stop_consumer_) {
    if (poll(fds, 2, 100) < 0 && errno != EINTR) break;
    const uint64_t serving = passes_->begin();
    const int n = ring_buffer__consume(rb);
    if (n < 0 && n != -EINTR) break;
    // A pass drains the whole ring (4 MiB: tens of thousands of notices).
    // The lock that trigger writes and reads take is held for one chunk at
    // a time, so they wait for at most one chunk's work, and a shutdown
    // for at most one chunk too.
    for (size_t done = 0; done < batch.size() && !stop_consumer_; done += kNoticesPerLock) {
      std::lock_guard lock(mu_);
      const size_t end = std::min(batch.size(), done + kNoticesPerLock);
      for (size_t i = done; i < end; ++i) deliver(batch[i]);
      delivered_ += end - done;
    }
    batch.clear();
    note_lost_lines(seen);
    passes_->end(serving);
  }
  passes_->running(false);
  ring_buffer__free(rb);
}

}  // namespace histd::engine
