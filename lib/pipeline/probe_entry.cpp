// SPDX-License-Identifier: GPL-2.0-only
// A probe event's definition, as the kernel lists it, to the computation of
// its record by a kprobe program (codegen::ProbeEntry). x86_64 only, as the
// raw syscall entries: the register offsets are those of its struct pt_regs
// (asm/ptrace.h, user ABI).
#include <fmt/format.h>

#include <array>
#include <utility>

#include "histd/pipeline.h"

namespace histd::pipeline {

namespace {

using Base = catalog::ProbeFetch::Base;

Unexpected<Error> cannot(const catalog::EventFormat& f, std::string why) {
  return fail(ErrorKind::Invalid, EINVAL, fmt::format("{}:{}: {}", f.system, f.name, why));
}

// The kernel's names (regs_query_register_offset) and their offsets.
constexpr std::array<std::pair<std::string_view, uint32_t>, 21> kRegisters{{
    {"r15", 0},  {"r14", 8},       {"r13", 16}, {"r12", 24}, {"bp", 32},     {"bx", 40},  {"r11", 48},
    {"r10", 56}, {"r9", 64},       {"r8", 72},  {"ax", 80},  {"cx", 88},     {"dx", 96},  {"si", 104},
    {"di", 112}, {"orig_ax", 120}, {"ip", 128}, {"cs", 136}, {"flags", 144}, {"sp", 152}, {"ss", 160},
}};
constexpr uint32_t kSp = 152, kAx = 80;
// The first six arguments of a call, by the x86_64 calling convention.
constexpr std::array<uint32_t, 6> kArgumentRegisters{112, 104, 96, 88, 72, 64};

std::optional<uint32_t> register_offset(std::string_view name) {
  for (const auto& [n, off] : kRegisters)
    if (n == name) return off;
  return std::nullopt;
}

// Where the value starts: a register, or an immediate.
Expected<codegen::ProbeValue> base_value(const catalog::EventFormat& f, const catalog::ProbeDefinition& d,
                                         const catalog::ProbeArg& a) {
  codegen::ProbeValue v;
  const catalog::ProbeFetch& fetch = a.fetch;
  switch (fetch.base) {
    case Base::Register: {
      auto off = register_offset(fetch.reg);
      if (!off) return cannot(f, fmt::format("{}: no register %{} on x86_64", a.name, fetch.reg));
      v.reg_offset = *off;
      break;
    }
    case Base::Argument:
      if (d.is_return) return cannot(f, fmt::format("{}: histd does not compute $argN at a return probe yet", a.name));
      if (fetch.index > kArgumentRegisters.size())
        return cannot(f, fmt::format("{}: histd computes the six arguments passed in registers, not $arg{}", a.name,
                                     fetch.index));
      v.reg_offset = kArgumentRegisters[fetch.index - 1];
      break;
    case Base::ReturnValue:
      v.reg_offset = kAx;
      break;
    case Base::StackPointer:
      v.reg_offset = kSp;
      break;
    case Base::Comm:
      v.base = codegen::ProbeValue::Base::Comm;
      break;
    case Base::Immediate:
      v.base = codegen::ProbeValue::Base::Immediate;
      v.immediate = static_cast<uint64_t>(fetch.immediate);
      break;
    case Base::Symbol:
      return cannot(f, fmt::format("{}: histd does not compute @SYM yet (@ADDR it does)", a.name));
    case Base::EventField:
      return cannot(f, fmt::format("{}: ${} is an eprobe's, of the event it is attached to", a.name, fetch.symbol));
  }
  return v;
}

// An eprobe's argument's base: a field of the attached event's record.
Expected<codegen::ProbeValue> field_value(const catalog::EventFormat& f, const catalog::EventFormat& attached,
                                          const catalog::ProbeArg& a) {
  using codegen::ProbeValue;
  ProbeValue v;
  const catalog::ProbeFetch& fetch = a.fetch;
  if (fetch.base == Base::Comm) {
    v.base = ProbeValue::Base::Comm;
    return v;
  }
  if (fetch.base == Base::Immediate) {
    v.base = ProbeValue::Base::Immediate;
    v.immediate = static_cast<uint64_t>(fetch.immediate);
    return v;
  }
  if (fetch.base != Base::EventField)
    return cannot(f, fmt::format("{}: an eprobe fetches $FIELD, $comm or an immediate", a.name));
  const catalog::Field* field = attached.find(fetch.symbol);
  if (!field)
    return cannot(f, fmt::format("{}: {}:{} has no field {}", a.name, attached.system, attached.name, fetch.symbol));
  v.base = ProbeValue::Base::Field;
  v.reg_offset = field->offset;
  v.record_size = field->size;
  v.record_signed = field->is_signed;
  if (field->kind == catalog::FieldKind::DynamicString)
    v.record_string = ProbeValue::RecordString::Dynamic;
  else if (field->kind == catalog::FieldKind::CharArray)
    v.record_string = ProbeValue::RecordString::Static;
  else if (field->kind != catalog::FieldKind::Integer ||
           (field->size != 1 && field->size != 2 && field->size != 4 && field->size != 8))
    return cannot(f, fmt::format("{}: histd reads numbers and strings of an event, not a {}", a.name, field->type));
  return v;
}

}  // namespace

Expected<codegen::ProbeEntry> probe_entry(const catalog::EventFormat& format, const catalog::EventFormat* attached) {
  if (!format.probe) return cannot(format, format.probe_error.empty() ? "not a probe event" : format.probe_error);
  const catalog::ProbeDefinition& d = *format.probe;
  codegen::ProbeEntry entry;
  entry.is_return = d.is_return;
  entry.uprobe = d.uprobe;
  entry.eprobe = d.eprobe;
  if (d.eprobe && !attached) return cannot(format, "the event it is attached to is gone");
  entry.fixed_size = format.record_size();
  for (const catalog::ProbeArg& a : d.args) {
    const catalog::Field* field = format.find(a.name);
    if (!field) return cannot(format, fmt::format("argument {} is not a field of its format", a.name));
    auto v = d.eprobe ? field_value(format, *attached, a) : base_value(format, d, a);
    if (!v) return unexpected(std::move(v).error());
    // A uprobe's memory is the task's: every read is of user memory.
    for (const catalog::ProbeFetch::Deref& r : a.fetch.derefs) v->derefs.push_back({r.offset, r.user || d.uprobe});
    v->field_offset = field->offset;
    v->field_size = field->size;
    v->string = field->kind == catalog::FieldKind::DynamicString;
    v->user_string = a.fetch.type == "ustring" || d.uprobe;
    if (v->base == codegen::ProbeValue::Base::Comm && !v->string)
      return cannot(format, fmt::format("{}: $comm is a string", a.name));
    if (!v->string && field->size != 1 && field->size != 2 && field->size != 4 && field->size != 8)
      return cannot(format, fmt::format("{}: histd computes numbers and strings, not a {}", a.name, field->type));
    entry.values.push_back(std::move(*v));
  }
  return entry;
}

}  // namespace histd::pipeline
