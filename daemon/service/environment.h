// SPDX-License-Identifier: GPL-2.0-only
// What histd needs of the machine (or the container) it runs in, each
// checked at start so that a missing piece is refused with one line naming
// it and how to grant it, instead of a bare EPERM from the first map or
// mount: a table of probes (kRequirements in environment.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "histd/result.h"
#include "service/options.h"

namespace histd::daemon {

// What the process is allowed, as /proc/self/status says: its effective
// capabilities and whether a seccomp filter is on it.
struct Privileges {
  uint64_t effective = 0;  // CapEff bits
  bool seccomp_filter = false;
};
Privileges own_privileges();

// The first requirement `opt` needs that this process lacks: the line
// histd exits with ("histd: cannot run here: ... (systemd-nspawn: ...;
// podman: ...; Kubernetes: ...)"). Probes: a map and a perf event made and
// closed, /dev/fuse opened and closed; tracefs mounted where histd would
// mount it next anyway; the BPF helpers every start needs
// (runtime::kernel_helpers()), each a two-instruction program loaded.
Status check_environment(const Options& opt);

// What this kernel is too old for, a line each ("this kernel (5.15.0) has
// no bpf_loop() (Linux 5.17): ... cannot be traced"), for the start's log:
// histd runs, and a trigger needing it is refused when written.
std::vector<std::string> kernel_notes();

// Why histd cannot run under the kernel's lockdown, from the text of
// /sys/kernel/security/lockdown ("none integrity [confidentiality]", the
// mode in brackets); "" when it can (none, integrity, no lockdown file).
// Pure: unit-tested.
std::string lockdown_refusal(std::string_view lockdown);

// Why a call that needs `capability` (CAP_BPF, ...) failed with `err`, for
// a process with `p`: a seccomp filter, or the capability missing, or
// neither known (pure: unit-tested).
enum class Refusal { None, Seccomp, Capability, Other };
Refusal refusal_of(int err, const Privileges& p, int capability);

}  // namespace histd::daemon
