// SPDX-License-Identifier: GPL-2.0-only
// Who may see kernel addresses (symbols::may_see_kernel_addresses).
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "histd/symbols.h"

namespace histd::symbols {

namespace {

constexpr int kCapSyslog = 34;  // linux/capability.h

std::optional<long> read_number(const char* path) {
  FILE* f = std::fopen(path, "re");
  if (!f) return std::nullopt;
  long v = 0;
  const bool ok = std::fscanf(f, "%ld", &v) == 1;
  std::fclose(f);
  return ok ? std::optional<long>(v) : std::nullopt;
}

std::string link_of(const std::string& path) {
  char buf[256];
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// CAP_SYSLOG in the task's effective set, counted only when the task is in
// histd's user namespace: the kernel asks for it in the initial one, and a
// task that owns a user namespace of its own has every capability there.
bool has_cap_syslog(int32_t pid) {
  const std::string proc = fmt::format("/proc/{}", pid);
  const std::string ns = link_of(proc + "/ns/user");
  if (ns.empty() || ns != link_of("/proc/self/ns/user")) return false;
  FILE* f = std::fopen((proc + "/status").c_str(), "re");
  if (!f) return false;
  char line[256];
  unsigned long long eff = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof(line), f)) found = std::sscanf(line, "CapEff: %llx", &eff) == 1;
  std::fclose(f);
  return found && ((eff >> kCapSyslog) & 1) != 0;
}

}  // namespace

bool show_kernel_addresses(int kptr_restrict, int perf_event_paranoid, bool cap_syslog) {
  switch (kptr_restrict) {
    case 0:
      return perf_event_paranoid <= 1 || cap_syslog;
    case 1:
      return cap_syslog;
    default:
      return false;
  }
}

bool may_see_kernel_addresses(uint32_t uid, int32_t pid) {
  if (uid == 0) return true;
  const auto restrict_level = read_number("/proc/sys/kernel/kptr_restrict");
  // Without CONFIG_PERF_EVENTS there is no paranoia level: never "for perf".
  const long paranoid = read_number("/proc/sys/kernel/perf_event_paranoid").value_or(2);
  if (!restrict_level || *restrict_level < 0) return false;
  return show_kernel_addresses(static_cast<int>(*restrict_level), static_cast<int>(paranoid),
                               pid > 0 && has_cap_syslog(pid));
}

}  // namespace histd::symbols
