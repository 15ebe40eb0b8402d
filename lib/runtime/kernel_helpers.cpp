// SPDX-License-Identifier: GPL-2.0-only
// The BPF helpers histd's programs call, the Linux release each came in
// and what calls it (histd/runtime.h, "The kernel histd needs"). A kernel
// older than a helper refuses any program calling it with the verifier's
// "invalid func unknown#<id>": histd names the helper and the release
// instead, at start for those every start needs, and for the others when
// a trigger needs one.
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "histd/fd.h"
#include "histd/runtime.h"

namespace histd::runtime {

namespace {

constexpr std::string_view kEveryStart = "";

// Ordered by the release that brought them; "" for what every start needs.
constexpr KernelHelper kHelpers[] = {
    {BPF_FUNC_map_lookup_elem, "bpf_map_lookup_elem", "3.19", kEveryStart},
    {BPF_FUNC_map_update_elem, "bpf_map_update_elem", "3.19", kEveryStart},
    {BPF_FUNC_map_delete_elem, "bpf_map_delete_elem", "3.19", kEveryStart},
    {BPF_FUNC_ktime_get_ns, "bpf_ktime_get_ns", "4.1", kEveryStart},
    {BPF_FUNC_get_smp_processor_id, "bpf_get_smp_processor_id", "4.1", kEveryStart},
    {BPF_FUNC_tail_call, "bpf_tail_call", "4.2", kEveryStart},
    {BPF_FUNC_get_current_pid_tgid, "bpf_get_current_pid_tgid", "4.2", kEveryStart},
    {BPF_FUNC_get_current_comm, "bpf_get_current_comm", "4.2", kEveryStart},
    {BPF_FUNC_get_stack, "bpf_get_stack", "4.18", kEveryStart},
    {BPF_FUNC_probe_read_user, "bpf_probe_read_user", "5.5", kEveryStart},
    {BPF_FUNC_probe_read_kernel, "bpf_probe_read_kernel", "5.5", kEveryStart},
    {BPF_FUNC_probe_read_user_str, "bpf_probe_read_user_str", "5.5", kEveryStart},
    {BPF_FUNC_probe_read_kernel_str, "bpf_probe_read_kernel_str", "5.5", kEveryStart},
    {BPF_FUNC_ktime_get_boot_ns, "bpf_ktime_get_boot_ns", "5.8", kEveryStart},
    {BPF_FUNC_seq_write, "bpf_seq_write", "5.8", kEveryStart},
    {BPF_FUNC_ringbuf_output, "bpf_ringbuf_output", "5.8", kEveryStart},
    {BPF_FUNC_ringbuf_reserve, "bpf_ringbuf_reserve", "5.8", kEveryStart},
    {BPF_FUNC_ringbuf_submit, "bpf_ringbuf_submit", "5.8", kEveryStart},
    {BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf", "5.11",
     "syscall events entered from the raw sys_enter and sys_exit (--raw-syscalls)"},
    {BPF_FUNC_get_func_ip, "bpf_get_func_ip", "5.15", "kprobe events (a kprobe's address)"},
    {BPF_FUNC_loop, "bpf_loop", "5.17",
     "a glob with text between two stars ('*ab*') over a string longer than 16 bytes"},
    {BPF_FUNC_ktime_get_tai_ns, "bpf_ktime_get_tai_ns", "6.1", "timestamps with trace_clock tai"},
};

// The verifier's words for a helper id past the kernel's last.
constexpr std::string_view kUnknownHelper = "invalid func unknown#";
// And for one it has but will not give this program: "program of this type
// cannot use helper bpf_probe_read_kernel#113" (Linux 5.17 on), "unknown
// func bpf_probe_read_kernel#113" before.
constexpr std::string_view kRefusedHelper[] = {"cannot use helper ", "unknown func "};
// What a kernel locked down for confidentiality takes from every BPF
// program (LOCKDOWN_BPF_READ_KERNEL in bpf_tracing_func_proto()).
constexpr std::string_view kLockedDownHelpers[] = {"bpf_probe_read_kernel#", "bpf_probe_read_kernel_str#"};

// A helper the kernel has and refuses to any program: its lockdown's.
std::string locked_down_helper(std::string_view log, std::string_view release) {
  for (std::string_view refused : kRefusedHelper) {
    const size_t at = log.find(refused);
    if (at == std::string_view::npos) continue;
    const std::string_view named = log.substr(at + refused.size());
    for (std::string_view helper : kLockedDownHelpers)
      if (named.starts_with(helper))
        return fmt::format(
            "this kernel ({}) refuses {}() to BPF programs, as it does when locked down for confidentiality "
            "(/sys/kernel/security/lockdown; histd cannot run under that lockdown)",
            release, helper.substr(0, helper.size() - 1));
  }
  return {};
}

// "5.17" before "5.8": releases compare number by number.
bool older(std::string_view a, std::string_view b) {
  auto parts = [](std::string_view v) {
    unsigned major = 0, minor = 0;
    auto [rest, ec] = std::from_chars(v.data(), v.data() + v.size(), major);
    if (ec == std::errc() && rest < v.data() + v.size() && *rest == '.')
      std::from_chars(rest + 1, v.data() + v.size(), minor);
    return std::pair{major, minor};
  };
  return parts(a) < parts(b);
}

// The newest release among the helpers every start needs.
std::string_view every_start_release() {
  std::string_view r = "0";
  for (const KernelHelper& h : kHelpers)
    if (h.needed_for.empty() && older(r, h.since)) r = h.since;
  return r;
}

// Whether C text calls `name`: the name, not the tail of a longer one,
// before a parenthesis.
bool calls(std::string_view source, std::string_view name) {
  for (size_t at = source.find(name); at != std::string_view::npos; at = source.find(name, at + 1)) {
    const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(source[at - 1])) || source[at - 1] == '_');
    if (starts && source.substr(at + name.size()).starts_with("(")) return true;
  }
  return false;
}

}  // namespace

std::span<const KernelHelper> kernel_helpers() { return kHelpers; }

const KernelHelper* kernel_helper(int id) {
  const auto* h =
      std::find_if(std::begin(kHelpers), std::end(kHelpers), [&](const KernelHelper& k) { return k.id == id; });
  return h == std::end(kHelpers) ? nullptr : h;
}

std::string this_kernel_release() {
  struct utsname u {};
  if (uname(&u) != 0) return "unknown";
  return u.release;
}

std::string helper_call_log(int id) {
  // A call and an exit: the verifier looks the id up before it checks the
  // call's arguments, so an older kernel says "invalid func unknown#<id>"
  // and a newer one anything else (or loads it).
  bpf_insn insns[2] = {};
  insns[0].code = BPF_JMP | BPF_CALL;
  insns[0].imm = id;
  insns[1].code = BPF_JMP | BPF_EXIT;
  char log[4096];
  log[0] = '\0';
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
  attr.insns = reinterpret_cast<uintptr_t>(insns);
  attr.insn_cnt = 2;
  attr.license = reinterpret_cast<uintptr_t>("GPL");
  attr.log_buf = reinterpret_cast<uintptr_t>(log);
  attr.log_size = sizeof log;
  attr.log_level = 1;
  Fd prog(static_cast<int>(syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr)));
  if (prog) return {};
  return std::string(log, strnlen(log, sizeof log));
}

bool kernel_knows_helper(int id) { return helper_call_log(id).find(kUnknownHelper) == std::string::npos; }

KernelShortfall kernel_shortfall(const std::function<bool(const KernelHelper&)>& knows, std::string_view release) {
  KernelShortfall s;
  std::string every_start;
  std::string_view needed;
  for (const KernelHelper& h : kHelpers) {
    if (knows(h)) continue;
    if (!h.needed_for.empty()) {
      s.notes.push_back(fmt::format("this kernel ({}) has no {}() (Linux {}): {} cannot be traced", release, h.name,
                                    h.since, h.needed_for));
      continue;
    }
    every_start += fmt::format("{}{}() (Linux {})", every_start.empty() ? "" : ", ", h.name, h.since);
    if (older(needed, h.since)) needed = h.since;
  }
  if (!every_start.empty())
    s.refusal = fmt::format(
        "this kernel ({}) lacks BPF helpers every histd program may call: {}; histd needs Linux {} or later", release,
        every_start, needed);
  return s;
}

std::string helper_refusal(std::string_view log, std::string_view release) {
  const size_t at = log.find(kUnknownHelper);
  if (at == std::string_view::npos) return locked_down_helper(log, release);
  const std::string_view digits = log.substr(at + kUnknownHelper.size());
  int id = 0;
  if (std::from_chars(digits.data(), digits.data() + digits.size(), id).ec != std::errc()) return {};
  const KernelHelper* h = kernel_helper(id);
  if (!h) return fmt::format("this kernel ({}) has no BPF helper #{}, which the generated program calls", release, id);
  return fmt::format(
      "this kernel ({}) has no {}() helper, which came in Linux {}: the generated program calls it for {}", release,
      h->name, h->since, h->needed_for.empty() ? "any trigger" : h->needed_for);
}

std::string kernel_needed(std::string_view source) {
  std::string_view release = every_start_release();
  std::string newer;
  for (const KernelHelper& h : kHelpers) {
    if (h.needed_for.empty() || !calls(source, h.name)) continue;
    newer += fmt::format("{}{}(): {}", newer.empty() ? "" : ", ", h.name, h.since);
    if (older(release, h.since)) release = h.since;
  }
  if (newer.empty()) return fmt::format("Linux {} or later", release);
  return fmt::format("Linux {} or later ({})", release, newer);
}

}  // namespace histd::runtime
