// SPDX-License-Identifier: GPL-2.0-only
// The kernel tracepoints histd enters BTF-typed (codegen::BtfEntry): the
// scheduler's, where run-queue latency is measured. A classic tracepoint
// program is handed a record the kernel has just filled in a perf buffer;
// a tp_btf program is handed the tracepoint's arguments and builds only
// the record, which costs less (bench/runqlat.sh, the floor) and is not
// skipped while another BPF program runs on the CPU. Each row says what
// every field of the event's record is made of, as its TP_fast_assign
// (include/trace/events/sched.h); a format that differs in any field (another
// kernel's) keeps the classic entry.
#include <algorithm>
#include <array>

#include "histd/pipeline.h"

namespace histd::pipeline {

namespace {

struct BtfField {
  std::string_view name;
  uint32_t size;
  bool comm;               // a task's comm: `value` is the task
  std::string_view value;  // BPF C of ctx (bpf/btf_entry.bpf.h)
};
struct BtfEvent {
  std::string_view system;
  std::string_view event;
  // Text the print fmt must hold: the task states histd_btf_switch_state()
  // computes with, as this kernel prints them.
  std::array<std::string_view, 2> print_fmt_holds;
  std::array<BtfField, 7> fields;  // name "" ends the list
};

constexpr std::string_view kSwitchTaskReport = "0x00000020 | 0x00000040) + 1) << 1)";
constexpr std::string_view kSwitchIdle = "{ 0x00000080, \"I\" }";

// The wakeups' class (sched_wakeup_template): the woken task, argument 0.
constexpr std::array<BtfField, 7> kWakeupFields = {{
    {"comm", 16, true, "HISTD_BTF_TASK(ctx, 0)"},
    {"pid", 4, false, "HISTD_BTF_TASK(ctx, 0)->pid"},
    {"prio", 4, false, "HISTD_BTF_TASK(ctx, 0)->prio"},
    {"target_cpu", 4, false, "HISTD_BTF_TASK(ctx, 0)->thread_info.cpu"},
}};

// sched_switch(preempt, prev, next, prev_state).
constexpr BtfEvent kBtfEvents[] = {
    {"sched",
     "sched_switch",
     {kSwitchTaskReport, kSwitchIdle},
     {{
         {"prev_comm", 16, true, "HISTD_BTF_TASK(ctx, 1)"},
         {"prev_pid", 4, false, "HISTD_BTF_TASK(ctx, 1)->pid"},
         {"prev_prio", 4, false, "HISTD_BTF_TASK(ctx, 1)->prio"},
         {"prev_state", 8, false, "histd_btf_switch_state(ctx)"},
         {"next_comm", 16, true, "HISTD_BTF_TASK(ctx, 2)"},
         {"next_pid", 4, false, "HISTD_BTF_TASK(ctx, 2)->pid"},
         {"next_prio", 4, false, "HISTD_BTF_TASK(ctx, 2)->prio"},
     }}},
    {"sched", "sched_wakeup", {}, kWakeupFields},
    {"sched", "sched_wakeup_new", {}, kWakeupFields},
    {"sched", "sched_waking", {}, kWakeupFields},
};

// The row's record laid out as `format` has it, or nothing when the format
// has a field the row does not build or lacks one it does.
std::optional<codegen::BtfEntry> laid_out(const BtfEvent& row, const catalog::EventFormat& format) {
  for (std::string_view text : row.print_fmt_holds)
    if (!text.empty() && format.print_fmt.find(text) == std::string::npos) return std::nullopt;
  codegen::BtfEntry entry;
  entry.target = std::string(row.event);
  size_t built = 0;
  for (const BtfField& f : row.fields) {
    if (f.name.empty()) break;
    const catalog::Field* field = format.find(f.name);
    if (!field || field->size != f.size) return std::nullopt;
    entry.stores.push_back({field->offset, f.size, f.comm, std::string(f.value)});
    ++built;
  }
  const size_t own =
      std::count_if(format.fields.begin(), format.fields.end(), [](const catalog::Field& f) { return !f.is_common; });
  if (own != built) return std::nullopt;
  return entry;
}

}  // namespace

std::optional<codegen::BtfEntry> btf_entry(const catalog::EventFormat& format, bool btf_tracepoints) {
  if (!btf_tracepoints || format.source != catalog::EventSource::Tracepoint) return std::nullopt;
  for (const BtfEvent& row : kBtfEvents)
    if (row.system == format.system && row.event == format.name) return laid_out(row, format);
  return std::nullopt;
}

}  // namespace histd::pipeline
