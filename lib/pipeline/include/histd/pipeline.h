// SPDX-License-Identifier: GPL-2.0-only
// One command through the stages in order, parse -> plan -> codegen, without
// an engine (plan_command, compile: `histctl check`/`explain` and the
// tests); and the one function that builds an event's program
// (event_unit, compile_event), which histd's deployer calls. histd itself
// parses and plans a command as its registry applies it
// (registry::Registry), against the registry's state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "histd/catalog.h"
#include "histd/codegen.h"
#include "histd/diagnostic.h"
#include "histd/parse.h"
#include "histd/plan.h"
#include "histd/result.h"
#include "histd/synth.h"

namespace histd::pipeline {

struct Planned {
  parse::HistCommand command;
  plan::HistPlan plan;
};

struct Compiled {
  parse::HistCommand command;
  plan::HistPlan plan;
  codegen::GeneratedUnit unit;  // the BPF C unit of this trigger alone
};

// plan, for a command parsed once at the front door (the engine).
Result<plan::HistPlan, Diagnostic> plan_command(const parse::HistCommand& command, const catalog::EventFormat& format,
                                                const plan::PlanContext& registry = {});

// parse -> plan, for front ends that hold only text (histctl check, tests);
// `max_bytes` as parse::parse_trigger.
Result<Planned, Diagnostic> plan_command(std::string_view text, const catalog::EventFormat& format,
                                         const plan::PlanContext& registry = {},
                                         size_t max_bytes = parse::kMaxCommandBytes);

// --- one event's program ---------------------------------------------------
// Plans and filters are borrowed: they must outlive what is built from them.

// An event's triggers as its program takes them.
struct EventTriggers {
  struct Hist {
    const plan::HistPlan* plan = nullptr;
    uint32_t control_slot = 0;  // index into the engine's control array
  };
  std::vector<Hist> hist;                       // in creation order
  std::vector<codegen::ControlInput> controls;  // newest first, as the kernel lists them
};

// A synthetic event triggers may generate: where its records go, and its
// own triggers, which run inlined in every program generating it.
struct SynthSink {
  const synth::SynthDefinition* def = nullptr;  // none: an event without a definition (id 0)
  uint32_t id = 0;                              // its records' common_type
  uint32_t control_slot = 0;                    // paused: nothing wants its records
  uint32_t trace_slot = 0;                      // paused: not traced
  EventTriggers triggers;
  std::vector<codegen::EprobeOutput> eprobes;  // recorded eprobes on it
};

// What one event's program is made of, as the engine holds it: the event's
// own triggers, the synthetic events any trigger may generate (by name),
// and the system call whose raw sys_enter / sys_exit tracepoint enters it
// (none: the event's own tracepoint, or injected records).
struct EventParts {
  EventTriggers own;
  std::map<std::string, SynthSink> synths;
  std::optional<catalog::SyscallEvent> syscall;
  // A tracepoint entered BTF-typed: the entry that builds its record (btf_entry).
  std::optional<codegen::BtfEntry> btf;
  // The event is enabled: its records go to the trace buffer (record_input).
  std::optional<codegen::RecordInput> record;
  // A probe event: the entry that computes its record (probe_entry).
  std::optional<codegen::ProbeEntry> probe;
};

// The same, resolved for codegen: each trigger with its control slot and
// the synthetic targets of its actions, the synthetic events inlined (those
// generated, directly or down a chain, that have triggers) with their
// depth, and the entry.
struct EventUnit {
  std::vector<codegen::TriggerInput> triggers;
  std::vector<codegen::ControlInput> controls;
  std::vector<codegen::InlinedEvent> inlined;
  codegen::EventEntry entry;
  std::optional<codegen::RecordInput> record;
  // Every hist trigger's plan by its number in the unit (its maps are
  // tbl<n>, st<n>, ...): the event's own, then the inlined events'.
  std::vector<const plan::HistPlan*> numbered() const;
};

// Resolves `parts`; fails (E2BIG) when a chain of synthetic events runs
// deeper than the BPF side has buffers for (HISTD_MAX_DEPTH).
Expected<EventUnit> event_unit(const EventParts& parts);

// How an enabled event's program records it: its id, fixed size and
// dynamic fields, from its format.
codegen::RecordInput record_input(const catalog::EventFormat& format);

// Which tasks decide whether an event of `format` is seen while
// set_event_pid lists tasks, as the kernel's sched_switch and wakeup probes
// set ignore_pid: the current task, and sched_switch's prev_pid or next_pid,
// a wakeup's woken pid (codegen::PidCheck). A row of a table each.
codegen::PidCheck pid_check(const catalog::EventFormat& format);

// How a probe event's program computes its record: each argument of its
// definition (format.probe) to its field. Invalid, saying why, for what
// histd's programs cannot compute (format.probe_error, $argN past the six
// argument registers or on a return probe, @SYM, unknown registers).
// An eprobe's $FIELDs are fields of `attached`, the event it is attached to.
Expected<codegen::ProbeEntry> probe_entry(const catalog::EventFormat& format,
                                          const catalog::EventFormat* attached = nullptr);

// The entry histd attaches `format`'s program through: with --raw-syscalls
// (`raw_syscalls`), the raw sys_enter / sys_exit tracepoint for a syscall
// event whose record can be rebuilt there (EventFormat::syscall); else none.
std::optional<catalog::SyscallEvent> syscall_entry(const catalog::EventFormat& format, bool raw_syscalls);
// The entry histd attaches `format`'s program through BTF-typed, with
// `btf_tracepoints`: for the scheduler's events whose record it can build
// from the tracepoint's arguments (a table, btf_events.cpp); else none.
std::optional<codegen::BtfEntry> btf_entry(const catalog::EventFormat& format, bool btf_tracepoints);
// Whether histd chains the programs of this event when it attaches it
// (codegen::EventEntry::chained; docs/design/bpf.md, "Program chains"): a
// tracepoint's, entered classically or from the raw syscall tracepoints.
bool chained_entry(catalog::EventSource source);
inline bool chained_entry(const catalog::EventFormat& format) { return chained_entry(format.source); }
// Whether this kind of event's records reach its programs only as histd
// hands them over, through the test entry (codegen::EventEntry::test_entry):
// synthetic events and ftrace's marker, which nothing attaches to.
bool injected_only(catalog::EventSource source);

// THE function that turns an event's unit into its BPF C unit: the engine
// loads what it returns, explain prints it, the tests compile it.
codegen::GeneratedUnit compile_event(const EventUnit& unit);

struct CompileOptions {
  // Show the program histd --raw-syscalls would load (see syscall_entry).
  bool raw_syscalls = false;
  // Show the program histd --btf-tracepoints=false would load (see btf_entry).
  bool btf_tracepoints = true;
};

// parse -> plan -> compile_event, for offline checks and explain: the unit
// the engine would build for this command as the event's only trigger, on
// control slot 0.
Result<Compiled, Diagnostic> compile(std::string_view text, const catalog::EventFormat& format,
                                     CompileOptions options = {});

}  // namespace histd::pipeline
