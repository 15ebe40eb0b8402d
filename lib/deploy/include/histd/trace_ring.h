// SPDX-License-Identifier: GPL-2.0-only
// The trace ring: the BPF ring buffer the programs send to histd (trace
// lines of enabled synthetic events, recorded kernel events, their stacks,
// snapshot() notices), the thread that drains it, and the trace and
// snapshot buffers it fills, with tracing_on and options/stacktrace (two
// words of the control array). Part of the deployer (histd/deploy.h),
// which owns it and answers what a notice needs from the triggers
// (Notices); the engine hands it to the front ends (Engine::trace_ring).
// Thread-safe, apart from what says otherwise: the buffers have their own
// lock, the switches and counts are the kernel's maps or atomics. The
// consumer delivers each chunk under the lock given to start_consumer()
// (the engine's, which guards the deployer the Notices read).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "histd/catalog.h"
#include "histd/fd.h"
#include "histd/printfmt.h"
#include "histd/result.h"
#include "histd/symbols.h"
#include "histd/synth.h"
#include "histd/trace_buffer.h"

namespace histd::deploy {

// Notices the ring buffer to histd had no room for, since histd started
// (histd fell behind by a whole ring), summed over CPUs (HISTD_LOST_*).
struct RingLost {
  uint64_t trace_records = 0;     // records of enabled synthetic events: trace lines lost
  uint64_t snapshot_notices = 0;  // snapshot() notices: snapshots not taken
};

// What the kernel names alike for every tree of a histd, read at its
// first use and kept: its symbols (kallsyms: .sym keys, %pS, stacks) and
// its enum constants (BTF: print fmts that name them). A tree and its
// instances share one (deploy::Options::kernel_names): read for each
// instance, they would cost every instance that records as much again.
class KernelNames {
 public:
  const symbols::SystemResolver& resolver() const { return resolver_; }
  std::shared_ptr<const printfmt::Enums> enums() const;

 private:
  symbols::SystemResolver resolver_;
  mutable std::once_flag enums_read_;
  mutable std::shared_ptr<const printfmt::Enums> enums_;
};

class RingPasses;

class TraceRing {
 public:
  // What a notice needs from the triggers and synthetic events, asked
  // under the consumer's lock: the ring knows neither.
  struct Notices {
    // A snapshot() notice of the trigger in control slot `slot`, with the
    // triggering value and the entry's key: whether it takes the snapshot
    // (onmax() only on a new maximum).
    std::function<bool(uint32_t slot, uint64_t value, std::span<const uint8_t> key)> snapshot;
    // The definition of synthetic event `id` when its records are traced
    // (enabled); null otherwise, and the record is dropped.
    std::function<const synth::SynthDefinition*(uint32_t id)> traced_synth;
  };
  // Makes the ring buffer map (kernel memory: the whole ring at once).
  using MakeRing = std::function<Expected<Fd>()>;
  // `make_ring` and `lost`: the maps every unit sends to (codegen::kRingMap,
  // kLostMap), the ring made by the first ring_fd(). `control`: the
  // deployer's control array, borrowed (it outlives the ring), whose
  // HISTD_TRACING_SLOT and HISTD_STACKTRACE_OPTION_SLOT words are tracing_on
  // and options/stacktrace. `names` name kernel addresses in the lines.
  // `cmdlines`: where the recorded tasks' comms go (saved_cmdlines).
  TraceRing(MakeRing make_ring, Fd lost, int control, uint32_t possible_cpus, size_t buffer_size,
            std::shared_ptr<trace::Cmdlines> cmdlines, std::shared_ptr<const KernelNames> names, Notices notices);
  ~TraceRing();
  TraceRing(const TraceRing&) = delete;
  TraceRing& operator=(const TraceRing&) = delete;

  // The ring buffer map, made at the first call: by the first program of
  // the tree, so a tree (an instance) that never had one holds no ring
  // (whose pages are the kernel's from its creation), no consumer thread
  // and no mapping of it.
  Expected<int> ring_fd();
  bool has_ring() const;
  uint32_t possible_cpus() const { return possible_cpus_; }
  // buffer_size_kb: what each CPU's raw buffer holds, and the trace and
  // snapshot buffers' lines, in KiB. A new size keeps what fits (the
  // oldest goes, as overruns); 0 is refused (EINVAL), and so is more than
  // kMaxBufferKb (ENOMEM): histd's buffers grow as they fill, where the
  // kernel's allocation would fail at once.
  static constexpr uint64_t kMaxBufferKb = uint64_t{1} << 20;
  uint64_t buffer_size_kb() const;
  Status set_buffer_size_kb(uint64_t kb);
  // saved_cmdlines: the tasks the recorded events name, by pid.
  trace::Cmdlines& cmdlines() { return *cmdlines_; }
  int lost_fd() const { return lost_.get(); }

  // Lets the ring be drained on a thread of its own, which delivers each
  // chunk under `lock` (the engine's, which guards the deployer); a process
  // that forks (daemonizing) lets it after the fork. The thread starts then
  // or when the ring is made, whichever comes last. stop_consumer() ends
  // it for good; the caller must not hold `lock` then.
  void start_consumer(std::mutex& lock);
  void stop_consumer();

  // Readers wait for a pass of the consumer begun after they ask (at most
  // a second), so they see every record committed before the read
  // (RingPasses). Lines are formatted on arrival for both kinds of reader
  // (`hide_kernel_addresses`: those who may not see kernel addresses).
  std::string read_trace(bool hide_kernel_addresses = false);
  void clear_trace();  // after taking what the ring holds, as read_trace
  // trace_pipe: waits up to `timeout` for lines and takes them out.
  std::optional<std::string> consume_trace(std::chrono::milliseconds timeout, size_t max_bytes,
                                           bool hide_kernel_addresses = false);
  // ---- per CPU (per_cpu/cpuN/): the possible CPUs, numbered from 0
  uint32_t cpus() const { return possible_cpus_; }
  // per_cpu/cpuN/trace and trace_pipe: that CPU's lines (trace_pipe takes
  // them out, without waiting).
  std::string read_trace_cpu(uint32_t cpu, bool hide_kernel_addresses = false);
  std::optional<std::string> consume_trace_cpu(uint32_t cpu, size_t max_bytes, bool hide_kernel_addresses = false);
  // trace_pipe_raw: the oldest page of recorded events (kernel events,
  // probe events, traced synthetic events) of `cpu`, in the kernel's
  // ring-buffer page format (trace::RawBuffer); nullopt when it has none.
  // `settled`: finding none, waits for a pass of the ring's consumer first
  // (a non-blocking reader draining the buffer sees every record committed
  // before its read, as `trace` does; a blocking one is woken anyway).
  std::optional<std::string> take_raw_page(uint32_t cpu, bool settled = false);
  bool raw_empty(uint32_t cpu) const;
  // A splice of trace_pipe_raw: the oldest page no more events go to, as
  // the kernel's splice takes only those; nullopt while there is none.
  std::optional<std::string> take_full_raw_page(uint32_t cpu);
  bool raw_has_full_page(uint32_t cpu) const;
  trace::RawStats raw_stats(uint32_t cpu) const;
  // The snapshot file: its lines, or while it has none the kernel's help
  // with whether a snapshot buffer is allocated (a snapshot trigger, or a
  // snapshot taken, allocates it; `echo 0 > snapshot` frees it).
  std::string read_snapshot(bool hide_kernel_addresses = false);
  void clear_snapshot();     // echo 2 (any number but 0 and 1) > snapshot
  void free_snapshot();      // echo 0 > snapshot
  void take_snapshot_now();  // echo 1 > snapshot: the buffers swap
  // A number written to the snapshot file: 0 frees the snapshot buffer, 1
  // takes a snapshot (the buffers swap), any other clears it.
  void write_snapshot(uint64_t value);
  // A snapshot trigger was made: the buffer is allocated, as the kernel's.
  void allocate_snapshot() { snapshot_allocated_ = true; }
  // tracing_on: lines are recorded; else dropped, and trace_marker is EBADF.
  bool tracing_on() const;
  void set_tracing_on(bool on);
  // options/stacktrace: every recorded event followed by the kernel stack.
  bool stacktrace_option() const;
  void set_stacktrace_option(bool on);
  // Reads, once, what printing kernel events' records takes of the kernel
  // (its symbols, its enum constants): a tenth of a second, which the first
  // event enabled would otherwise spend under the engine's lock, holding
  // up every reader. Thread-safe; the printer is still made under the lock.
  void read_kernel_names() const;
  // Whether a traced synthetic event has a stack field (long[]): its
  // records need the kernel's symbols, as stack notices do. The deployer
  // says so under the lock; the consumer reads it without.
  void set_synth_stacks(bool on) { synth_stacks_ = on; }
  // A trace_marker write's trace line, by task `pid` (`comm`): the text as
  // its ftrace:print record carries it (its newline dropped) and when.
  struct Marker {
    std::string body;
    uint64_t ts = 0;
  };
  Marker mark(std::string_view text, uint32_t pid, const std::string& comm);
  RingLost ring_lost() const;
  // Generated synthetic events delivered so far (traced if enabled).
  uint64_t delivered() const { return delivered_.load(); }

 private:
  // The deployer teaches the printer under the lock the consumer delivers
  // under, which alone guards printer_ (learn_format is not thread-safe).
  friend class Deployer;
  // Teaches the printer event `system`:`event`'s format (and, the first
  // time, the kernel's enums and printk strings): records of it can then
  // be printed.
  Status learn_format(const catalog::Catalog& catalog, const std::string& system, const std::string& event);
  void consume(std::mutex& lock);
  void deliver(std::span<const uint8_t> notice);
  // deliver()'s kinds of notice (`header`: the trace line's, without pid).
  void deliver_snapshot(uint64_t id, std::span<const uint8_t> rec);
  void deliver_stack(trace::LineHeader header, uint32_t pid, std::span<const uint8_t> rec);
  void deliver_record(trace::LineHeader header, std::span<const uint8_t> rec);
  void deliver_synth(trace::LineHeader header, uint64_t id, std::span<const uint8_t> rec);
  // The per-CPU counts of one HISTD_LOST_* slot (empty when unreadable).
  std::vector<uint64_t> lost_per_cpu(uint32_t slot) const;
  // Puts the trace lines lost since `seen` (per CPU) into the trace buffer.
  void note_lost_lines(std::vector<uint64_t>& seen);

  // The consumer's thread, once it may run and there is a ring.
  void launch_locked();

  const MakeRing make_ring_;
  mutable std::mutex ring_mu_;           // guards ring_, consumer_lock_ and consumer_'s start
  Fd ring_;                              // made once (ring_fd()), then read by the consumer without the lock
  std::mutex* consumer_lock_ = nullptr;  // start_consumer()'s, once called
  const Fd lost_;                        // what the ring had no room for (HISTD_LOST_*), shared by every unit
  const int control_;
  const uint32_t possible_cpus_;  // per-CPU maps hold a value per possible CPU
  const std::shared_ptr<const KernelNames> names_;
  const symbols::SystemResolver& resolver_;  // names_'s
  const Notices notices_;
  const std::shared_ptr<trace::Cmdlines> cmdlines_;
  trace::TraceBuffer trace_;
  trace::TraceBuffer snapshot_;
  // The same records raw, one buffer a CPU (trace_pipe_raw), each as large
  // as the trace buffer.
  std::vector<std::unique_ptr<trace::RawBuffer>> raw_;
  std::atomic<bool> synth_stacks_ = false;  // set_synth_stacks()
  // Prints enabled kernel events' records as the kernel's trace does; made
  // when the first event is enabled (reading BTF and kallsyms takes time).
  std::unique_ptr<printfmt::Printer> printer_;
  std::unique_ptr<RingPasses> passes_;  // reads wait for what the ring holds
  std::atomic<uint64_t> delivered_{0};
  std::atomic<bool> snapshot_allocated_{false};
  std::atomic<bool> stop_consumer_{false};
  std::thread consumer_;
};

}  // namespace histd::deploy
