// SPDX-License-Identifier: GPL-2.0-only
#include "service/environment.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "histd/catalog.h"
#include "histd/fd.h"
#include "histd/runtime.h"

namespace histd::daemon {

namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

// How to grant a piece, in the three places histd is most often run.
struct Grant {
  const char* nspawn;
  const char* podman;
  const char* kubernetes;
};

std::string how(const Grant& g) {
  return fmt::format("systemd-nspawn: {}; podman: {}; Kubernetes: {}", g.nspawn, g.podman, g.kubernetes);
}

// One requirement: a probe that says what is missing ("" if nothing).
struct Requirement {
  const char* what;
  std::string (*missing)(const Options& opt, const Privileges& p);
};

constexpr Grant kSeccompGrant{"--system-call-filter='bpf perf_event_open'", "--security-opt seccomp=unconfined",
                              "securityContext.seccompProfile.type: Unconfined"};
constexpr Grant kCapsGrant{"--capability=CAP_BPF,CAP_PERFMON,CAP_SYS_ADMIN",
                           "--cap-add=BPF,PERFMON,SYS_ADMIN (or --privileged)",
                           "securityContext.capabilities.add: [BPF, PERFMON, SYS_ADMIN]"};

// Why a call failed, as one line with how to grant what it needs.
std::string refused(const char* call, int err, const Privileges& p, int capability, const char* cap_name) {
  switch (refusal_of(err, p, capability)) {
    case Refusal::Seccomp:
      return fmt::format("a seccomp filter forbids {} ({})", call, how(kSeccompGrant));
    case Refusal::Capability:
      return fmt::format("{} is refused without {} ({})", call, cap_name, how(kCapsGrant));
    case Refusal::Other:
      return fmt::format("{} failed: {}", call, std::strerror(err));
    case Refusal::None:
      break;
  }
  return {};
}

std::string bpf_missing(const Options&, const Privileges& p) {
  bpf_attr attr{};
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  Fd map(static_cast<int>(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr)));
  return map ? std::string() : refused("bpf()", errno, p, kCapBpf, "CAP_BPF");
}

std::string perf_missing(const Options&, const Privileges& p) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.disabled = 1;
  // Every CPU's, as a tracepoint's programs are attached.
  Fd event(static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC)));
  return event ? std::string() : refused("perf_event_open()", errno, p, kCapPerfmon, "CAP_PERFMON");
}

std::string fuse_missing(const Options&, const Privileges&) {
  Fd fuse(open("/dev/fuse", O_RDWR | O_CLOEXEC));
  if (fuse) return {};
  const int err = errno;
  const Grant grant{"--bind=/dev/fuse --property=DeviceAllow='/dev/fuse rw'", "--device /dev/fuse",
                    "a /dev/fuse hostPath volume in a privileged container"};
  if (err == ENOENT) return fmt::format("there is no /dev/fuse: the tree cannot be mounted ({})", how(grant));
  return fmt::format("/dev/fuse: {}: the tree cannot be mounted ({})", std::strerror(err), how(grant));
}

// Lockdown is the host kernel's: no container option grants it.
std::string lockdown_missing(const Options&, const Privileges&) {
  std::ifstream in("/sys/kernel/security/lockdown");
  std::string text;
  std::getline(in, text);
  return lockdown_refusal(text);
}

std::string tracefs_missing(const Options& opt, const Privileges&) {
  if (!opt.tracefs.empty()) return {};
  auto found = catalog::find_tracefs();
  if (found) return {};
  return fmt::format("{} ({})", found.error().context,
                     how(Grant{"--bind=/sys/kernel/tracing", "-v /sys/kernel/tracing:/sys/kernel/tracing",
                               "a /sys/kernel/tracing hostPath volume"}));
}

std::string bpffs_missing(const Options& opt, const Privileges&) {
  if (opt.pin_dir.empty()) return {};
  struct statfs st {};
  // An empty /sys/fs/bpf is mounted by histd (Instance::claim); a read-only
  // /sys refuses that.
  if (statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC) return {};
  if (access("/sys/fs/bpf", W_OK) == 0 || opt.pin_dir.rfind("/sys/fs/bpf", 0) != 0) return {};
  return fmt::format(
      "there is no bpffs at /sys/fs/bpf, and /sys is read-only: tables could not be pinned ({}; or "
      "--pin-dir '' to pin none)",
      how(Grant{"--bind=/sys/fs/bpf", "-v /sys/fs/bpf:/sys/fs/bpf", "a /sys/fs/bpf hostPath volume"}));
}

// What this kernel lacks of the helpers every start needs (`every_start`)
// or of the others: each helper probed once, by whichever asks for it.
runtime::KernelShortfall shortfall(bool every_start) {
  return runtime::kernel_shortfall(
      [&](const runtime::KernelHelper& h) {
        return h.needed_for.empty() != every_start || runtime::kernel_knows_helper(h.id);
      },
      runtime::this_kernel_release());
}

// After bpf(): a program refused for want of the call itself is not the
// kernel's age.
std::string kernel_missing(const Options&, const Privileges&) { return shortfall(true).refusal; }

// In the order a start meets them.
constexpr Requirement kRequirements[] = {
    {"lockdown", lockdown_missing}, {"tracefs", tracefs_missing}, {"bpf", bpf_missing},   {"kernel", kernel_missing},
    {"perf", perf_missing},         {"bpffs", bpffs_missing},     {"fuse", fuse_missing},
};

}  // namespace

Privileges own_privileges() {
  Privileges p;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("CapEff:")) p.effective = std::stoull(line.substr(7), nullptr, 16);
    if (line.starts_with("Seccomp:")) p.seccomp_filter = line.find('2') != std::string::npos;
  }
  return p;
}

std::string lockdown_refusal(std::string_view lockdown) {
  // The kernel's confidentiality mode makes tracefs create no file
  // (LOCKDOWN_TRACEFS: a mount is empty) and takes bpf_probe_read_kernel()
  // from BPF programs (LOCKDOWN_BPF_READ_KERNEL); integrity forbids nothing
  // histd does. A lockdown is lifted only by booting without it.
  if (lockdown.find("[confidentiality]") == std::string_view::npos) return {};
  return "the kernel is locked down for confidentiality (/sys/kernel/security/lockdown): it creates no tracefs "
         "files and forbids BPF programs to read kernel memory, which histd needs (boot with lockdown=integrity, "
         "which histd runs under, or without lockdown)";
}

Refusal refusal_of(int err, const Privileges& p, int capability) {
  if (err != EPERM && err != EACCES) return Refusal::Other;
  const bool has = (p.effective >> capability & 1) || (p.effective >> kCapSysAdmin & 1);
  if (!has) return Refusal::Capability;
  // With the capability, EPERM comes from a filter (nspawn's and podman's
  // default ones return EPERM for bpf() and perf_event_open()).
  return p.seccomp_filter ? Refusal::Seccomp : Refusal::Other;
}

Status check_environment(const Options& opt) {
  const Privileges p = own_privileges();
  for (const Requirement& r : kRequirements)
    if (std::string missing = r.missing(opt, p); !missing.empty())
      return fail(ErrorKind::Invalid, EPERM, "cannot run here: " + missing);
  return ok_status();
}

std::vector<std::string> kernel_notes() { return shortfall(false).notes; }

}  // namespace histd::daemon
