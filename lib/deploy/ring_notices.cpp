// SPDX-License-Identifier: GPL-2.0-only
// The deployer's side of the trace ring (histd/trace_ring.h): what a notice
// needs from the triggers and synthetic events (TraceRing::Notices); and
// records run through an event's test entries: trace_marker's through
// ftrace:print's programs, a test's by inject().
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "deploy/event_programs.h"

namespace histd::deploy {

namespace {

// Whether trigger `t` takes the snapshot of a notice (onmax(): a new maximum).
bool takes_snapshot(Trigger& t, uint64_t value, std::span<const uint8_t> key) {
  bool onmax = false;
  for (const plan::ActionPlan& a : t.plan.actions)
    if (a.kind == parse::Action::Kind::Snapshot) onmax = a.handler == parse::Action::Handler::OnMax;
  if (onmax && t.snapshot && value <= t.snapshot->value) return false;
  t.snapshot = Trigger::Snapshot{value, std::vector<uint8_t>(key.begin(), key.end())};
  return true;
}

}  // namespace

// The kernel's conditional snapshot: onmax() takes one when its value beats
// the trigger's global maximum, onchange() on every change. Each trigger has
// a slot of its own (allocate_slot), so at most one takes it.
bool snapshot_notice(const Events& events, uint32_t slot, uint64_t value, std::span<const uint8_t> key) {
  bool taken = false;
  for (auto& [id, ev] : events)
    for (auto& t : ev->triggers)
      if (t->slot == slot) taken = takes_snapshot(*t, value, key) || taken;
  return taken;
}

Status Deployer::write_marker(std::string_view text, uint32_t pid, const std::string& comm) {
  // As the kernel, whose marker is an event in a ring that is not
  // recording: no line, no ftrace:print for its triggers, EBADF.
  if (!ring_->tracing_on()) return fail(ErrorKind::Invalid, EBADF, "tracing is off (tracing_on is 0)");
  const TraceRing::Marker marker = ring_->mark(text, pid, comm);
  const std::string& body = marker.body;
  // ftrace:print, as the kernel records a marker: ip, then the text (its
  // newline dropped), NUL-padded so that a string read never runs past it.
  const EventState* ev = find_event_in(events_, catalog::EventId{catalog::kMarkerSystem, catalog::kMarkerEvent});
  if (!ev || programs_->test_fds(*ev).empty()) return ok_status();
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
  for (int fd : programs_->test_fds(*ev))
    if (auto rc = kernel_->test_run(fd, rec, marker.ts, task); !rc) return unexpected(std::move(rc).error());
  return ok_status();
}

Expected<bool> Deployer::inject(const catalog::EventId& event, std::span<const uint8_t> record) {
  const EventState* ev = find_event_in(events_, event);
  const std::vector<int> fds = ev ? programs_->test_fds(*ev) : std::vector<int>{};
  if (fds.empty()) return false;
  for (int fd : fds) {
    auto rc = kernel_->test_run(fd, record, 0, nullptr);
    if (!rc) return unexpected(std::move(rc).error());
    if (*rc != 0) return fail(ErrorKind::Invalid, EINVAL, fmt::format("test entry rejected the record ({})", *rc));
  }
  return true;
}

}  // namespace histd::deploy
