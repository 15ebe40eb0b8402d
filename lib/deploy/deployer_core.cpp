// SPDX-License-Identifier: GPL-2.0-only
// The deployer's making and ending (create, shutdown), its events by id,
// and what several of its paths share: refusals, Missed counts, a
// trigger's release.
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"
#include "deploy/synthetic_events.h"
#include "hist_shared.h"
#include "histd/codegen.h"

namespace histd::deploy {

Deployer::Deployer(catalog::Catalog& catalog, runtime::Compiler& compiler, Options options,
                   std::shared_ptr<Kernel> kernel, Fd control, Fd lost, Fd pids, Log log)
    : kernel_(std::move(kernel)),
      catalog_(catalog),
      compiler_(compiler),
      options_(std::move(options)),
      possible_cpus_(static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1))),
      log_(std::move(log)),
      objects_(std::make_unique<KernelObjects>(*kernel_, std::move(control), options_.pin_dir)),
      pids_(std::make_unique<EventPids>(*kernel_, *objects_, std::move(pids))),
      probe_files_(catalog),
      names_(options_.kernel_names ? options_.kernel_names : std::make_shared<const KernelNames>()),
      ring_(std::make_unique<TraceRing>(
          // A ring only when a program is built: most trees and instances
          // never record, and its pages are the kernel's from its creation.
          [kernel = kernel_] {
            return kernel->create_map({BPF_MAP_TYPE_RINGBUF, "histd_ring", 0, 0, 1u << 22});
          },
          std::move(lost), objects_->control_fd(), possible_cpus_, options_.trace_buffer_size,
          options_.cmdlines ? options_.cmdlines : std::make_shared<trace::Cmdlines>(), names_,
          TraceRing::Notices{[this](uint32_t slot, uint64_t value, std::span<const uint8_t> key) {
                               return snapshot_notice(events_, slot, value, key);
                             },
                             [this](uint32_t id) { return synthetics_->traced(id); }})),
      programs_(std::make_unique<EventPrograms>(EventPrograms::State{
          catalog_, compiler_, *kernel_, options_, events_, synths_, eprobe_filters_, *objects_, *ring_, *pids_})),
      synthetics_(
          std::make_unique<SyntheticEvents>(SyntheticEvents::State{catalog_, events_, synths_, *objects_, *programs_})),
      reads_(*kernel_, events_, *objects_, *programs_, possible_cpus_) {}

void Deployer::set_restoring(bool on) { programs_->set_restoring(on); }

Deployer::~Deployer() {
  ring_->stop_consumer();
  shutdown();
}

Expected<std::unique_ptr<Deployer>> Deployer::create(catalog::Catalog& catalog, runtime::Compiler& compiler,
                                                     Options options, Log log, std::shared_ptr<Kernel> kernel) {
  auto control =
      kernel->create_map({BPF_MAP_TYPE_ARRAY, "histd_ctl", 4, sizeof(histd_trigger_control), HISTD_CONTROL_SLOTS});
  if (!control) return unexpected(std::move(control).error());
  auto lost = kernel->create_map({BPF_MAP_TYPE_PERCPU_ARRAY, "histd_lost", 4, 8, HISTD_LOST_SLOTS});
  if (!lost) return unexpected(std::move(lost).error());
  // set_event_pid's list: its elements are allocated as pids are listed.
  auto pids = kernel->create_map({BPF_MAP_TYPE_HASH, codegen::kPidsMap, sizeof(uint32_t), sizeof(uint8_t),
                                  HISTD_MAX_EVENT_PIDS, BPF_F_NO_PREALLOC});
  if (!pids) return unexpected(std::move(pids).error());
  // Every unit this deployer compiles opens with these lines: a histd-cc
  // started from now on learns them first (Compiler::set_prelude).
  compiler.set_prelude(codegen::kUnitPrelude);
  return std::unique_ptr<Deployer>(new Deployer(catalog, compiler, std::move(options), std::move(kernel),
                                                std::move(*control), std::move(*lost), std::move(*pids),
                                                std::move(log)));
}

CommandResult Deployer::user_error(EventState& ev, Diagnostic d, int err) {
  const catalog::EventId id{ev.system, ev.event};
  log_(&id, &d, {});
  return unexpected(CommandFailure{std::move(d), Error{err == EINVAL ? ErrorKind::Invalid : ErrorKind::Busy, err, {}}});
}

void Deployer::shutdown() {
  shutting_down_ = true;
  // Every slot paused first: a program still attached while the kernel
  // finishes its detach (runtime::Attachment) then counts and fires nothing,
  // so the dispatchers need not be emptied one by one.
  for (auto& [id, ev] : events_) {
    for (auto& t : ev->triggers) release_trigger(*t);
    for (auto& e : ev->controls) objects_->release_slot(e->slot);
    if (ev->record_slot) objects_->release_slot(*ev->record_slot);
  }
  for (auto& [id, ev] : events_) {
    if (ev->attachment) ev->attachment->keep_program_until_detached();
    ev->attachment.reset();
    ev->program.reset();
    ev->groups.clear();
    ev->triggers.clear();
    ev->controls.clear();
  }
  events_.clear();
  objects_->forget_tables();
}

// Triggers come back one at a time, each rebuilding its event, but none of
// those programs is installed on the way: after a kill -9 the dispatcher
// adopted from the pins still runs the dead histd's programs, which count
// every trigger of the event into the same pinned tables. Installing the
// program of the first restored trigger would leave the event's other
// triggers uncounted until their own turn (a compile each). The event's
// programs go in at the end, its chain first and slot 0 last (install_all).
// Restored in creation order, the triggers are laid out as the dead histd
// had them, and each program replaces its twin; only where removals had
// left room that later triggers took may a trigger count in two programs
// for the moment between two slot writes.
void Deployer::sweep_pins() { objects_->sweep_pins(events_); }

void Deployer::install_restored(std::vector<std::string>& problems) {
  for (auto& [id, ev] : events_) {
    if (!ev->attachment || (!ev->program && ev->groups.empty())) continue;
    auto st = programs_->install_all(*ev);
    if (!st) problems.push_back(fmt::format("{}:{}: {}", id.system, id.name, st.error().context));
  }
}

void Deployer::restore_missed_base(uint64_t uid, uint64_t base) {
  // A saved base counts on the dispatcher a previous histd pinned, adopted
  // by now; a dispatcher attached afresh (its counter below the base)
  // counts the trigger's misses from its start.
  // Its event's program waiting for the batch's end has no dispatcher yet:
  // end_batch() makes the same choice then.
  if (auto [ev, t] = find_trigger_in(events_, uid); t)
    t->missed_base = ev->deferred ? base : std::min(base, event_missed(*ev));
}

CommandResult Deployer::rebuild_failure(EventState& ev, const std::string& command, Error e) {
  // rebuild() says ENOSPC only for the maps of one program (see build()),
  // EMLINK for the programs of one event's chain (see layout()).
  if (e.kind == ErrorKind::Busy && e.err == ENOSPC)
    return user_error(ev, Diagnostic{ErrorCode::ProgramMapLimit, Span{0, 0}, command, std::move(e.context)}, ENOSPC);
  if (e.kind == ErrorKind::Busy && e.err == EMLINK)
    return user_error(ev, Diagnostic{ErrorCode::ChainLimit, Span{0, 0}, command, std::move(e.context)}, ENOSPC);
  return system_failure(std::move(e));
}

EventState& Deployer::event_state(const catalog::EventId& event) {
  auto& slot = events_[event];
  if (!slot) {
    slot = std::make_unique<EventState>();
    slot->system = event.system;
    slot->event = event.name;
  }
  return *slot;
}

void Deployer::release_trigger(Trigger& t, Release how) {
  objects_->release_slot(t.slot);
  // The last trigger of a pinned table unpins it, except at shutdown: then
  // the pins keep the counts for the next start; nor when a command that
  // adopted a previous histd's table fails: the counts stay for a retry.
  const bool keep = shutting_down_ || (how == Release::Undo && t.table && t.table->adopted);
  if (t.table && t.table.use_count() == 1 && !keep) objects_->unpin_table(*t.table);
  t.table.reset();
}

}  // namespace histd::deploy
