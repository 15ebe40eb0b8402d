// Recording an enabled kernel event: its program sends each record to the
// ring, where histd prints it into the trace buffer as the kernel's trace
// does (lib/printfmt). The length is the fixed part's, or further when a
// __data_loc / __rel_loc field's data ends beyond it (tracefs records that
// data after the fixed fields).
#include <fmt/format.h>

#include "codegen/emit.h"

namespace histd::codegen::detail {

std::string emit_record(const RecordInput& r) {
  std::string out = fmt::format(
      "struct {{\n  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n  __uint(max_entries, 1);\n"
      "  __type(key, __u32);\n  __type(value, struct histd_recbuf);\n}} {} SEC(\".maps\");\n\n",
      kRecordBufferMap);
  out += "static __attribute__((noinline)) void record_event(void *ctx, const void *rec, const struct histd_common *c) {\n";
  out += "  (void)ctx;\n";
  out += fmt::format("  __u32 size = {}u;\n", r.fixed_size);
  for (const RecordInput::Dynamic& d : r.dynamic) {
    // The location word: offset in its low 16 bits, length in its high 16.
    const uint32_t base = d.relative ? d.offset + 4 : 0;
    out += "  {\n";
    out += fmt::format("    __u32 loc = (__u32)HISTD_LOAD_U32(rec, {}u);\n", d.offset);
    out += fmt::format("    __u32 end = {}u + (loc & 0xffff) + (loc >> 16);\n", base);
    out += "    if (end > size)\n      size = end;\n  }\n";
  }
  out += fmt::format("  histd_record_out(&{}, rec, size, {}u, c);\n}}\n\n", kRecordBufferMap, r.id);
  return out;
}

}  // namespace histd::codegen::detail
