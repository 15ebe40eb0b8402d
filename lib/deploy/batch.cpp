// SPDX-License-Identifier: GPL-2.0-only
// Batches (Deployer::begin_batch .. end_batch): restoring or reloading many
// triggers loads each event's program once. Every trigger is still checked
// when its command runs (planned, compiled, its maps counted); only the
// kernel's verifier, whose work grows with the program, waits for the end.
// The batch's own commands (a restore's, a reload's) leave the compiles to
// the end too, one per program (set_batch_command).
#include <algorithm>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"

namespace histd::deploy {

void Deployer::begin_batch() {
  programs_->begin_batch();
  objects_->begin_batch();
}

void Deployer::set_batch_command(bool on) { programs_->set_batch_command(on); }

std::vector<Deployer::Refused> Deployer::end_batch() {
  programs_->end_batch();
  objects_->end_batch();
  std::vector<Refused> refused;
  for (auto& [id, ev] : events_) {
    if (!ev->deferred) continue;
    if (!programs_->rebuild(*ev, triggers_of(*ev), controls_of(*ev))) build_one_by_one(*ev, refused);
    // A restored trigger's saved base waited for the dispatcher (adopted
    // from its pins, or attached afresh: see restore_missed_base).
    const uint64_t now = event_missed(*ev);
    for (auto& t : ev->triggers) t->missed_base = std::min(t->missed_base, now);
  }
  // Every program that ran through them is gone now.
  objects_->free_released();
  return refused;
}

void Deployer::build_one_by_one(EventState& ev, std::vector<Refused>& refused) {
  std::vector<Trigger*> kept;
  std::vector<Trigger*> dropped;
  for (Trigger* t : triggers_of(ev)) {
    kept.push_back(t);
    auto st = programs_->rebuild(ev, kept, controls_of(ev));
    if (st) continue;
    kept.pop_back();
    dropped.push_back(t);
    refused.push_back(Refused{t->uid, std::move(st).error()});
  }
  // The program swapped in last holds `kept`, unless none loaded: then the
  // one from before the batch (or none) is still there.
  if (kept.empty()) (void)programs_->rebuild(ev, kept, controls_of(ev));
  ev.deferred = false;
  for (Trigger* t : dropped) drop_trigger(ev, t, Release::Undo);
  refresh_enablers_of(ev);
}

}  // namespace histd::deploy
