// SPDX-License-Identifier: GPL-2.0-only
// Which syscall events the raw sys_enter / sys_exit tracepoints can stand in for.
#include <seccomp.h>

#include <cstdlib>
#include <string>

#include "histd/catalog.h"

namespace histd::catalog {

namespace {

// The number libseccomp gives `name` on this machine's own ABI, if it names
// the same call back: a pseudo number (a call of another ABI) or a name that
// is only an alias does not count.
std::optional<int> native_syscall(const std::string& name) {
  const int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name.c_str());
  if (nr < 0) return std::nullopt;
  char* back = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
  const bool same = back && name == back;
  std::free(back);
  if (!same) return std::nullopt;
  return nr;
}

bool is_field(const Field& f, std::string_view name, uint32_t offset, uint32_t size) {
  return f.name == name && f.offset == offset && f.size == size && f.kind == FieldKind::Integer;
}

}  // namespace

std::optional<SyscallEvent> syscall_event(const EventFormat& format) {
#if defined(__x86_64__)
  if (format.system != "syscalls") return std::nullopt;
  SyscallEvent ev;
  std::string name;
  if (format.name.starts_with("sys_enter_")) {
    name = format.name.substr(10);
  } else if (format.name.starts_with("sys_exit_")) {
    name = format.name.substr(9);
    ev.exit = true;
  } else {
    return std::nullopt;
  }
  size_t i = 0;
  while (i < format.fields.size() && format.fields[i].is_common) ++i;
  if (i == format.fields.size() || !is_field(format.fields[i], "__syscall_nr", 8, 4)) return std::nullopt;
  const size_t first = ++i;
  if (ev.exit) {
    if (format.fields.size() != first + 1 || !is_field(format.fields[first], "ret", 16, 8)) return std::nullopt;
  } else {
    // Six argument registers: di, si, dx, r10, r8, r9.
    if (format.fields.size() - first > 6) return std::nullopt;
    for (; i < format.fields.size(); ++i) {
      const Field& f = format.fields[i];
      if (f.offset != 16 + 8 * (i - first) || f.size != 8 || f.kind != FieldKind::Integer) return std::nullopt;
    }
    ev.args = static_cast<uint32_t>(format.fields.size() - first);
  }
  auto nr = native_syscall(name);
  if (!nr) return std::nullopt;
  ev.nr = *nr;
  return ev;
#else
  (void)format;
  return std::nullopt;
#endif
}

}  // namespace histd::catalog
