// SPDX-License-Identifier: GPL-2.0-only
#include "plan/fields.h"

namespace histd::plan {

bool is_string_kind(catalog::FieldKind kind) {
  return kind == catalog::FieldKind::CharArray || kind == catalog::FieldKind::DynamicString ||
         kind == catalog::FieldKind::RelString;
}

std::optional<ResolvedField> resolve_field(const catalog::EventFormat& format, std::string_view name) {
  // An event's own field wins over an alias of the same name, as in the kernel.
  if (const catalog::Field* f = format.find(name)) {
    ResolvedField r;
    r.name = f->name;
    r.access.type = f->type;
    r.access.offset = f->offset;
    r.access.size = f->size;
    r.access.is_signed = f->is_signed;
    r.access.kind = f->kind;
    r.access.array_len = f->array_len;
    r.access.kernel_address = f->kernel_address;
    // A flexible char array (ftrace/print's `char buf[]`) runs to the end of
    // the record: read as a string of at most 256 bytes.
    if (f->kind == catalog::FieldKind::CharArray && f->size == 0) r.access.size = 256;
    if (f->name == "common_pid") {
      r.access.source = Source::CommonPid;
    } else if (f->offset < 8) {
      // A BPF tracepoint program cannot read the record's first 8 bytes; of
      // those only common_pid has another source.
      r.readable = false;
    }
    return r;
  }
  if (name == "common_cpu" || name == "cpu" || name == "CPU") {
    ResolvedField r;
    r.name = "common_cpu";
    r.access = FieldAccess{Source::CommonCpu, 0, 4, false, catalog::FieldKind::Integer, 0, "unsigned int"};
    return r;
  }
  if (name == "common_comm" || name == "comm" || name == "COMM") {
    ResolvedField r;
    r.name = "common_comm";
    r.access = FieldAccess{Source::CurrentComm, 0, 16, false, catalog::FieldKind::CharArray, 16, "char[16]"};
    return r;
  }
  if (name == "common_stacktrace" || name == "stacktrace") {
    ResolvedField r;
    r.name = "common_stacktrace";
    r.access = FieldAccess{Source::Stacktrace,        0,           8 * kStackDepth,  false,
                           catalog::FieldKind::Array, kStackDepth, "unsigned long[]"};
    return r;
  }
  if (name == "common_timestamp") {
    ResolvedField r;
    r.name = "common_timestamp";
    r.access = FieldAccess{Source::Timestamp, 0, 8, false, catalog::FieldKind::Integer, 0, "u64"};
    return r;
  }
  if (name == "hitcount") {
    ResolvedField r;
    r.name = "hitcount";
    r.access = FieldAccess{Source::Hitcount, 0, 8, false, catalog::FieldKind::Integer, 0, "u64"};
    return r;
  }
  return std::nullopt;
}

}  // namespace histd::plan
