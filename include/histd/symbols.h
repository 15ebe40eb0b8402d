// What the kernel's printk resolves for hist output: kernel symbols
// (%ps / %pS) from kallsyms text, and syscall names. Pure given the text;
// SystemResolver reads this machine's /proc/kallsyms and libseccomp's table.
#pragma once

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

class SystemResolver : public render::Resolver {
 public:
  // Reads /proc/kallsyms on the first symbol lookup (most tables never need
  // it, and it is most of an idle histd's memory); reload() re-reads it.
  void reload();
  std::string symbol(uint64_t addr) const override;
  std::string symbol_offset(uint64_t addr) const override;
  std::string syscall_name(uint64_t nr) const override;
  bool is_tracing_frame(uint64_t addr) const override;

 private:
  const KernelSymbols& kallsyms() const;
  mutable std::once_flag loaded_;
  mutable KernelSymbols kallsyms_;
};

}  // namespace histd::symbols
