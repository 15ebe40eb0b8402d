// SPDX-License-Identifier: GPL-2.0-only
// What controls tracing: recording an enabled kernel event (its program
// sends each record to the ring, where histd prints it into the trace
// buffer as the kernel's trace does, lib/printfmt; the length is the fixed
// part's, or further when a __data_loc / __rel_loc field's data ends beyond
// it, as tracefs records that data after the fixed fields), and the control
// triggers (traceon, traceoff, snapshot, stacktrace, enable_event,
// disable_event, enable_hist, disable_hist).
#include <fmt/format.h>

#include "codegen/emit.h"

namespace histd::codegen::detail {

namespace {

std::string percpu_buffer(const char* type, const char* name) {
  return fmt::format(
      "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, 1);\n"
      "  __type(key, __u32);\n  __type(value, struct {});\n}} {} SEC(\".maps\");\n\n",
      type, name);
}

using Kind = parse::ControlCommand::Kind;

}  // namespace

std::string emit_stack_buffer() { return percpu_buffer("histd_stkbuf", kStackBufferMap); }

std::string emit_eprobe_buffer() { return percpu_buffer("histd_recbuf", kEprobeBufferMap); }

std::string emit_record(const RecordInput& r, const std::string& filter) {
  std::string out = percpu_buffer("histd_recbuf", kRecordBufferMap);
  out +=
      "static __attribute__((noinline)) void record_event(void *ctx, const void *rec, const struct histd_common *c) "
      "{\n";
  // Not while its event is disabled (enable_event/disable_event flip it),
  // nor while tracing is off.
  out += fmt::format("  if (histd_paused({}u) || !histd_tracing_on())\n    return;\n", r.slot);
  if (!filter.empty()) out += fmt::format("  if (!{})\n    return;\n", filter);
  out += fmt::format("  __u32 size = {}u;\n", r.fixed_size);
  for (const RecordInput::Dynamic& d : r.dynamic) {
    // The location word: offset in its low 16 bits, length in its high 16.
    const uint32_t base = d.relative ? d.offset + 4 : 0;
    out += "  {\n";
    out += fmt::format("    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {}u);\n", d.offset);
    out += fmt::format("    __u32 end = {}u + (loc & 0xffff) + (loc >> 16);\n", base);
    out += "    if (end > size)\n      size = end;\n  }\n";
  }
  out += fmt::format("  histd_record_out(&{}, rec, size, {}u, c);\n", kRecordBufferMap, r.id);
  // options/stacktrace: the kernel stack after each record.
  out += fmt::format("  if (!histd_paused(HISTD_STACKTRACE_OPTION_SLOT))\n    histd_stack_out(&{}, ctx, c);\n}}\n\n",
                     kStackBufferMap);
  return out;
}

std::string emit_control(size_t i, const ControlInput& in, const std::string& filter) {
  std::string out = fmt::format(
      "static __attribute__((noinline)) void control_{}(void *ctx, const void *rec, const struct histd_common *c) {{\n",
      i);
  out += "  (void)ctx;\n  (void)rec;\n  (void)c;\n";
  if (!filter.empty()) out += fmt::format("  if (!{})\n    return;\n", filter);
  // traceon, traceoff and the *_event kinds fire (and count) only when they
  // change something, as the kernel's count functions decide.
  switch (in.kind) {
    case Kind::TraceOn:
      out += "  if (histd_tracing_on())\n    return;\n";
      break;
    case Kind::TraceOff:
      out += "  if (!histd_tracing_on())\n    return;\n";
      break;
    case Kind::EnableEvent:
    case Kind::DisableEvent:
      for (uint32_t slot : in.target_slots)
        out += fmt::format("  if ({}histd_paused({}u))\n    return;\n", in.kind == Kind::EnableEvent ? "!" : "", slot);
      break;
    default:
      break;
  }
  out += fmt::format("  if (!histd_take_count({}u))\n    return;\n", in.control_slot);
  switch (in.kind) {
    case Kind::TraceOn:
    case Kind::TraceOff:
      out += fmt::format("  histd_set_paused(HISTD_TRACING_SLOT, {});\n", in.kind == Kind::TraceOn ? 0 : 1);
      break;
    case Kind::Snapshot:
      out += fmt::format("  histd_snapshot_out({}u, c);\n", in.control_slot);
      break;
    case Kind::Stacktrace:
      out += fmt::format("  if (histd_tracing_on())\n    histd_stack_out(&{}, ctx, c);\n", kStackBufferMap);
      break;
    case Kind::EnableEvent:
    case Kind::DisableEvent:
    case Kind::EnableHist:
    case Kind::DisableHist: {
      const bool on = in.kind == Kind::EnableEvent || in.kind == Kind::EnableHist;
      for (uint32_t slot : in.target_slots) out += fmt::format("  histd_set_paused({}u, {});\n", slot, on ? 0 : 1);
      break;
    }
  }
  out += "}\n\n";
  return out;
}

}  // namespace histd::codegen::detail
