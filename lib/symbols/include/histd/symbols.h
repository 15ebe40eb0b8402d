// SPDX-License-Identifier: GPL-2.0-only
// What the kernel's printk resolves for hist output: kernel symbols
// (%ps / %pS) from kallsyms text, and syscall names. Pure given the text;
// SystemResolver reads this machine's /proc/kallsyms and libseccomp's table.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "histd/render.h"

namespace histd::symbols {

struct Symbol {
  uint64_t addr = 0;
  std::string name;
  std::string module;  // "" for the core kernel
};

struct Lookup {
  const Symbol* symbol = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;  // distance to the next symbol, as kallsyms computes it
};

class KernelSymbols {
 public:
  // Parses /proc/kallsyms text; keeps text symbols (t, T, w, W).
  static KernelSymbols parse(std::string_view kallsyms);
  std::optional<Lookup> lookup(uint64_t addr) const;
  size_t size() const { return symbols_.size(); }

 private:
  std::vector<Symbol> symbols_;  // sorted by address
};

// "name [module]" (%ps) or "name+0xoff/0xsize [module]" (%pS); "" if unknown.
std::string format_symbol(const std::optional<Lookup>& l, bool with_offset);

// A BPF program ([bpf]) or the loop that runs programs on a raw tracepoint
// (bpf_trace_run<n>, __bpf_trace_<tp>, __traceiter_<tp>).
bool is_tracing_frame(const std::optional<Lookup>& l);

// Whether the kernel shows kernel addresses to a reader, as its
// kallsyms_show_value() decides: kptr_restrict 0, when perf_event_paranoid
// is at most 1 or the reader has CAP_SYSLOG; 1, only with CAP_SYSLOG; 2 (or
// more), never. Pure.
bool show_kernel_addresses(int kptr_restrict, int perf_event_paranoid, bool cap_syslog);

// The same for a reader of histd's files or socket: root (uid 0) always
// sees them (the kernel's tracefs is root's alone); another user as
// show_kernel_addresses() decides from /proc/sys/kernel/kptr_restrict,
// /proc/sys/kernel/perf_event_paranoid and whether task `pid` has CAP_SYSLOG
// (in its effective set, in histd's user namespace). Anything that cannot
// be read hides them.
bool may_see_kernel_addresses(uint32_t uid, int32_t pid);

class SystemResolver : public render::Resolver {
 public:
  // Reads /proc/kallsyms on the first symbol lookup (most tables never need
  // it, and it is most of an idle histd's memory); reload() re-reads it.
  void reload();
  std::string symbol(uint64_t addr) const override;
  std::string symbol_offset(uint64_t addr) const override;
  std::string syscall_name(uint64_t nr) const override;
  bool is_tracing_frame(uint64_t addr) const override;
  // The kernel's symbols (/proc/kallsyms), read on first use.
  const KernelSymbols& kallsyms() const;
  // Whether they have been read (they are most of an idle histd's memory).
  bool has_symbols() const { return read_; }

 private:
  mutable std::once_flag loaded_;
  mutable KernelSymbols kallsyms_;
  mutable std::atomic<bool> read_ = false;
};

}  // namespace histd::symbols
