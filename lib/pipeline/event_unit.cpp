// SPDX-License-Identifier: GPL-2.0-only
// One event's program: its parts resolved into codegen's inputs, and the
// entry choice. Pure: the engine and explain build the same unit from the
// same parts.
#include <fmt/format.h>

#include <array>
#include <functional>

#include "hist_shared.h"
#include "histd/pipeline.h"

namespace histd::pipeline {

namespace {

// Each dynamic string or stack of a generated record gets this much room
// after the fixed part (codegen::SynthTarget::record_size).
constexpr uint32_t kDynamicStringRoom = 256;

codegen::SynthTarget synth_target(const SynthSink& sink) {
  codegen::SynthTarget t;
  t.id = sink.id;
  t.control_slot = sink.control_slot;
  t.trace_slot = sink.trace_slot;
  t.fixed_size = sink.def->fixed_size();
  uint32_t dynamic = 0;
  for (const synth::SynthField& f : sink.def->fields)
    if (f.kind == synth::SynthField::Kind::DynamicString || f.kind == synth::SynthField::Kind::Stack) ++dynamic;
  t.record_size = t.fixed_size + dynamic * kDynamicStringRoom;
  t.eprobes = sink.eprobes;
  return t;
}

// The synthetic events `own` generates, directly or down a chain, that have
// triggers to inline, each at one level deeper than the deepest trigger
// generating it: each level has its own record and key buffers.
Expected<std::map<std::string, uint32_t>> inlined_depths(const EventParts& parts) {
  std::map<std::string, uint32_t> depth;
  std::optional<std::string> too_deep;
  std::function<void(const plan::HistPlan&, uint32_t)> visit = [&](const plan::HistPlan& p, uint32_t d) {
    for (const plan::ActionPlan& a : p.actions) {
      if (a.synth.empty()) continue;
      auto sink = parts.synths.find(a.synth);
      if (sink == parts.synths.end() || (sink->second.triggers.hist.empty() && sink->second.triggers.controls.empty()))
        continue;
      if (d + 1 >= HISTD_MAX_DEPTH) {
        too_deep = a.synth;
        continue;
      }
      auto [it, fresh] = depth.emplace(a.synth, d + 1);
      if (!fresh && it->second >= d + 1) continue;
      it->second = d + 1;
      for (const EventTriggers::Hist& t : sink->second.triggers.hist) visit(*t.plan, d + 1);
    }
  };
  for (const EventTriggers::Hist& t : parts.own.hist) visit(*t.plan, 0);
  if (too_deep)
    return fail(
        ErrorKind::Invalid, E2BIG,
        fmt::format("synthetic event {} is generated more than {} events deep", *too_deep, HISTD_MAX_DEPTH - 1));
  return depth;
}

}  // namespace

std::vector<const plan::HistPlan*> EventUnit::numbered() const {
  std::vector<const plan::HistPlan*> out;
  for (const codegen::TriggerInput& t : triggers) out.push_back(t.plan);
  for (const codegen::InlinedEvent& e : inlined)
    for (const codegen::TriggerInput& t : e.triggers) out.push_back(t.plan);
  return out;
}

Expected<EventUnit> event_unit(const EventParts& parts) {
  auto depths = inlined_depths(parts);
  if (!depths) return unexpected(std::move(depths).error());
  // The synthetic events this unit runs the triggers of, numbered.
  std::map<std::string, int> inlined_index;
  for (const auto& [name, depth] : *depths) inlined_index.emplace(name, static_cast<int>(inlined_index.size()));
  auto trigger_input = [&](const EventTriggers::Hist& t, uint32_t depth) {
    codegen::TriggerInput in{t.plan, t.control_slot, {}, depth};
    for (const plan::ActionPlan& a : t.plan->actions) {
      codegen::SynthTarget target;
      auto sink = parts.synths.find(a.synth);
      if (!a.synth.empty() && sink != parts.synths.end() && sink->second.def) target = synth_target(sink->second);
      if (auto found = inlined_index.find(a.synth); found != inlined_index.end()) target.inlined = found->second;
      in.synths.push_back(target);
    }
    return in;
  };
  EventUnit unit;
  for (const EventTriggers::Hist& t : parts.own.hist) unit.triggers.push_back(trigger_input(t, 0));
  unit.controls = parts.own.controls;
  for (const auto& [name, depth] : *depths) {
    const EventTriggers& s = parts.synths.at(name).triggers;
    codegen::InlinedEvent ie;
    for (const EventTriggers::Hist& t : s.hist) ie.triggers.push_back(trigger_input(t, depth));
    ie.controls = s.controls;
    unit.inlined.push_back(std::move(ie));
  }
  if (parts.syscall) {
    unit.entry.kind =
        parts.syscall->exit ? codegen::EventEntry::Kind::SyscallExit : codegen::EventEntry::Kind::SyscallEnter;
    unit.entry.syscall_args = parts.syscall->args;
  }
  if (parts.btf) {
    unit.entry.kind = codegen::EventEntry::Kind::Btf;
    unit.entry.btf = *parts.btf;
  }
  if (parts.probe) {
    unit.entry.kind = codegen::EventEntry::Kind::Probe;
    unit.entry.probe = *parts.probe;
  }
  unit.record = parts.record;
  return unit;
}

codegen::RecordInput record_input(const catalog::EventFormat& format) {
  codegen::RecordInput r;
  r.id = format.id;
  r.fixed_size = format.record_size();
  for (const catalog::Field& f : format.fields) {
    // A __data_loc field's data follows the fixed part, whatever its type
    // (strings, arrays of numbers, bitmasks).
    const bool data_loc = f.kind == catalog::FieldKind::DynamicString || f.type.starts_with("__data_loc");
    const bool rel_loc = f.kind == catalog::FieldKind::RelString || f.type.starts_with("__rel_loc");
    if ((data_loc || rel_loc) && f.size == 4) r.dynamic.push_back({f.offset, rel_loc});
  }
  return r;
}

namespace {

// The events whose record names the tasks that decide them (the kernel's
// event_filter_pid_sched_switch_probe_pre/post, which look at prev and next
// only, and event_filter_pid_sched_wakeup_probe_pre/post, at the woken task
// and the current one); every other event is decided by the current task.
struct PidDecider {
  std::string_view system;
  std::string_view event;
  bool current;
  std::array<std::string_view, 2> fields;
};
constexpr PidDecider kPidDeciders[] = {
    {"sched", "sched_switch", false, {"prev_pid", "next_pid"}},
    {"sched", "sched_wakeup", true, {"pid", ""}},
    {"sched", "sched_wakeup_new", true, {"pid", ""}},
    {"sched", "sched_waking", true, {"pid", ""}},
};

}  // namespace

codegen::PidCheck pid_check(const catalog::EventFormat& format) {
  codegen::PidCheck check;
  for (const PidDecider& d : kPidDeciders) {
    if (d.system != format.system || d.event != format.name) continue;
    std::vector<uint32_t> offsets;
    for (std::string_view name : d.fields)
      if (const catalog::Field* f = name.empty() ? nullptr : format.find(name); f && f->size == 4)
        offsets.push_back(f->offset);
    // A format without the fields (another kernel's) keeps the default.
    if (offsets.empty()) break;
    check.current = d.current;
    check.pid_fields = std::move(offsets);
  }
  return check;
}

std::optional<catalog::SyscallEvent> syscall_entry(const catalog::EventFormat& format, bool raw_syscalls) {
  if (!raw_syscalls) return std::nullopt;
  return format.syscall;
}

codegen::GeneratedUnit compile_event(const EventUnit& unit) {
  return codegen::generate_event_unit(unit.triggers, unit.controls, unit.inlined, unit.entry,
                                      unit.record ? &*unit.record : nullptr);
}

}  // namespace histd::pipeline
