// SPDX-License-Identifier: GPL-2.0-only
// The running kernel's enum constants, for print fmts that name them.
#include <bpf/btf.h>

#include "histd/printfmt.h"

namespace histd::printfmt {

Enums kernel_enums() {
  Enums out;
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) return out;
  const uint32_t n = btf__type_cnt(vmlinux);
  for (uint32_t id = 1; id < n; ++id) {
    const btf_type* t = btf__type_by_id(vmlinux, id);
    if (btf_is_enum(t)) {
      const struct btf_enum* e = btf_enum(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i, ++e) out.emplace(btf__name_by_offset(vmlinux, e->name_off), e->val);
    } else if (btf_is_enum64(t)) {
      const struct btf_enum64* e = btf_enum64(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i, ++e)
        out.emplace(btf__name_by_offset(vmlinux, e->name_off), static_cast<int64_t>(btf_enum64_value(e)));
    }
  }
  btf__free(vmlinux);
  return out;
}

}  // namespace histd::printfmt
