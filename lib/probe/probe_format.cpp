// SPDX-License-Identifier: GPL-2.0-only
// What a histd eprobe looks like from outside: its dynamic_events line
// (eprobe_dyn_event_show()) and its format file (the kernel's
// traceprobe_define_arg_fields() and __set_print_fmt(PROBE_PRINT_EVENT)),
// so that tools written for the kernel's eprobes read histd's the same way.
#include <fmt/format.h>

#include "histd/probe.h"

namespace histd::probe {

namespace {

struct TypeInfo {
  std::string_view name;
  std::string_view field_type;  // as the format file declares it
  uint32_t size;
  bool is_signed;
  std::string_view print;  // in the print fmt
};

constexpr TypeInfo kTypes[] = {
    {"u8", "u8", 1, false, "%u"},
    {"u16", "u16", 2, false, "%u"},
    {"u32", "u32", 4, false, "%u"},
    {"u64", "u64", 8, false, "%Lu"},
    {"s8", "s8", 1, true, "%d"},
    {"s16", "s16", 2, true, "%d"},
    {"s32", "s32", 4, true, "%d"},
    {"s64", "s64", 8, true, "%Ld"},
    {"x8", "u8", 1, false, "0x%x"},
    {"x16", "u16", 2, false, "0x%x"},
    {"x32", "u32", 4, false, "0x%x"},
    {"x64", "u64", 8, false, "0x%Lx"},
    {"char", "u8", 1, false, "'%c'"},
    {"symbol", "u64", 8, false, "%pS"},
    {"string", "__data_loc char[]", 4, true, "\\\"%s\\\""},
    {"ustring", "__data_loc char[]", 4, true, "\\\"%s\\\""},
};

const TypeInfo& type_info(std::string_view name) {
  for (const TypeInfo& t : kTypes)
    if (t.name == name) return t;
  return kTypes[11];  // x64, the default (the parser admits no other name)
}

std::string field_line(std::string_view declaration, uint32_t offset, uint32_t size, bool is_signed) {
  return fmt::format("\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n", declaration, offset, size, is_signed ? 1 : 0);
}

bool is_string(const TypeInfo& t) { return t.field_type.starts_with("__data_loc"); }

}  // namespace

std::string list_line(const Define& d) {
  const catalog::ProbeDefinition& p = d.def;
  std::string out = fmt::format("e:{}/{} {}.{}", p.group, p.event, p.attached_system, p.attached_event);
  for (size_t i = 0; i < p.args.size(); ++i)
    out += fmt::format(" {}={}", p.args[i].name, i < d.arg_texts.size() ? d.arg_texts[i] : std::string("?"));
  return out;
}

std::string defining_line(const Define& d) {
  return d.filter.empty() ? list_line(d) : list_line(d) + " if " + d.filter;
}

std::string trace_prefix(const catalog::ProbeDefinition& def) {
  return fmt::format("({}.{})", def.attached_system, def.attached_event);
}

catalog::EventFormat format_of(const catalog::ProbeDefinition& def, uint32_t id) {
  std::string text = fmt::format("name: {}\nID: {}\nformat:\n", def.event, id);
  text += field_line("unsigned short common_type", 0, 2, false);
  text += field_line("unsigned char common_flags", 2, 1, false);
  text += field_line("unsigned char common_preempt_count", 3, 1, false);
  text += field_line("int common_pid", 4, 4, true);
  text += "\n";
  uint32_t offset = 8;
  std::string print = "\"", print_args;
  for (const catalog::ProbeArg& a : def.args) {
    const TypeInfo& t = type_info(arg_type(a));
    text += field_line(fmt::format("{} {}", t.field_type, a.name), offset, t.size, t.is_signed);
    offset += t.size;
    print += fmt::format(" {}={}", a.name, t.print);
    print_args += is_string(t) ? fmt::format(", __get_str({})", a.name) : fmt::format(", REC->{}", a.name);
  }
  text += fmt::format("\nprint fmt: {}\"{}\n", print, print_args);
  auto parsed = catalog::parse_format(text, def.group);
  // The text above is the parser's own grammar: it always parses.
  catalog::EventFormat format = parsed ? std::move(*parsed) : catalog::EventFormat{};
  format.probe = def;
  format.source = catalog::event_source(format);  // Probe, by its definition
  return format;
}

}  // namespace histd::probe
