// SPDX-License-Identifier: GPL-2.0-only
// The entry of a probe event's program. The kernel hands a kprobe program
// the registers, not the record its kprobe event writes; this code computes
// each argument as the kernel's fetch instructions would (kprobetrace.rst)
// and lays the record out as the event's format says, so that every
// trigger, filter and the trace printer read it like any other record.
#include <fmt/format.h>

#include "codegen/emit.h"

namespace histd::codegen::detail {

namespace {

const char* uint_type(uint32_t size) {
  switch (size) {
    case 1:
      return "__u8";
    case 2:
      return "__u16";
    case 4:
      return "__u32";
    default:
      return "__u64";
  }
}

std::string base_code(const ProbeValue& v) {
  switch (v.base) {
    case ProbeValue::Base::Register:
      return fmt::format("HISTD_REG(ctx, {})", v.reg_offset);
    case ProbeValue::Base::Immediate:
      return fmt::format("{}ULL", v.immediate);
    case ProbeValue::Base::Field: {
      const int string = v.record_string == ProbeValue::RecordString::Static    ? 1
                         : v.record_string == ProbeValue::RecordString::Dynamic ? 2
                                                                                : 0;
      return fmt::format("histd_probe_field(ctx, {}, {}, {}, {})", v.reg_offset, v.record_size, v.record_signed ? 1 : 0,
                         string);
    }
    case ProbeValue::Base::Comm:
      break;
  }
  return "0";
}

std::string value_code(const ProbeValue& v) {
  if (v.base == ProbeValue::Base::Comm)
    return fmt::format("    data = histd_probe_comm(rec, {}, data);\n", v.field_offset);
  std::string out = fmt::format("    __u64 v = {};\n", base_code(v));
  const size_t pointers = v.derefs.empty() ? 0 : v.derefs.size() - 1;
  for (size_t i = 0; i < pointers; ++i)
    out += fmt::format("    v = histd_probe_load(v + ({}LL), {});\n", v.derefs[i].offset, v.derefs[i].user ? 1 : 0);
  // The last read: at the value plus the last offset; without a dereference,
  // a string is at the value itself, a number is the value.
  const int64_t last = v.derefs.empty() ? 0 : v.derefs.back().offset;
  const bool last_user = v.derefs.empty() ? v.user_string : (v.derefs.back().user || v.user_string);
  if (v.string) {
    out += fmt::format("    data = histd_probe_string(rec, {}, data, v + ({}LL), {});\n", v.field_offset, last,
                       last_user ? 1 : 0);
  } else if (!v.derefs.empty()) {
    out += fmt::format("    histd_probe_read(rec + {}, {}, v + ({}LL), {});\n", v.field_offset, v.field_size, last,
                       last_user ? 1 : 0);
  } else {
    out += fmt::format("    *({} *)(rec + {}) = ({})v;\n", uint_type(v.field_size), v.field_offset,
                       uint_type(v.field_size));
  }
  return out;
}

}  // namespace

std::string probe_values(const ProbeEntry& entry) {
  std::string out;
  for (const ProbeValue& v : entry.values) out += "  {\n" + value_code(v) + "  }\n";
  return out;
}

std::string probe_entry(const ProbeEntry& entry, int needs_ts, int needs_pid) {
  // An eprobe's program runs at its attached event's tracepoint.
  std::string out = fmt::format("SEC(\"{}\")\nint event_prog(void *ctx) {{\n", entry.eprobe ? "tracepoint" : "kprobe");
  out += fmt::format("  HISTD_PROBE_ENTRY_BEGIN({}, {});\n", needs_ts, needs_pid);
  // An eprobe's filter, on the attached event's record (its ctx).
  if (entry.filter) out += "  if (!eprobe_filter(ctx, &c))\n    return 0;\n";
  // The kernel's probe address (the function's, for a return probe), and
  // where a return probe returns to.
  if (entry.eprobe) {
    // No probe address: the arguments follow the common fields.
  } else if (!entry.uprobe)
    out += "  *(__u64 *)(rec + 8) = bpf_get_func_ip(ctx);\n";
  else
    out += fmt::format("  *(__u64 *)(rec + 8) = {};\n", entry.is_return ? "0" : "HISTD_REG(ctx, HISTD_REG_IP)");
  if (entry.is_return) out += "  *(__u64 *)(rec + 16) = HISTD_REG(ctx, HISTD_REG_IP);\n";
  out += fmt::format("  __u32 data = {};\n", entry.fixed_size);
  out += probe_values(entry);
  out += "  (void)data;\n  handle(ctx, rec, &c);\n  return 0;\n}\n";
  return out;
}

std::string btf_entry(const BtfEntry& entry, int needs_ts, int needs_pid,
                      const std::optional<std::vector<RecordRange>>& reads) {
  std::string out = fmt::format("SEC(\"tp_btf/{}\")\nint event_prog(__u64 *ctx) {{\n", entry.target);
  out += fmt::format("  HISTD_BTF_ENTRY_BEGIN({}, {});\n", needs_ts, needs_pid);
  for (const BtfEntry::Store& s : entry.stores) {
    if (reads && !reads_any(*reads, s.offset, s.size)) continue;
    if (s.comm)
      out += fmt::format("  histd_btf_comm(rec + {}, {});\n", s.offset, s.value);
    else
      out += fmt::format("  *({} *)(rec + {}) = ({})({});\n", uint_type(s.size), s.offset, uint_type(s.size), s.value);
  }
  out += fmt::format("  HISTD_BTF_ENTRY_END(handle, {}, {});\n}}\n", needs_ts, needs_pid);
  return out;
}

}  // namespace histd::codegen::detail
