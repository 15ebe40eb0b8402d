// SPDX-License-Identifier: GPL-2.0-only
#include "histd/symbols.h"

#include <seccomp.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace histd::symbols {

KernelSymbols KernelSymbols::parse(std::string_view text) {
  KernelSymbols ks;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // "<hex addr> <type> <name>[\t[module]]"
    const size_t s1 = line.find(' ');
    if (s1 == std::string_view::npos || s1 + 3 > line.size() || line[s1 + 2] != ' ') continue;
    const char type = line[s1 + 1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    Symbol sym;
    std::string addr(line.substr(0, s1));
    char* stop = nullptr;
    sym.addr = std::strtoull(addr.c_str(), &stop, 16);
    if (!stop || *stop != '\0' || sym.addr == 0) continue;
    std::string_view rest = line.substr(s1 + 3);
    const size_t tab = rest.find('\t');
    sym.name = std::string(rest.substr(0, tab));
    if (tab != std::string_view::npos) {
      std::string_view mod = rest.substr(tab + 1);
      if (mod.size() >= 2 && mod.front() == '[' && mod.back() == ']')
        sym.module = std::string(mod.substr(1, mod.size() - 2));
    }
    ks.symbols_.push_back(std::move(sym));
  }
  std::stable_sort(ks.symbols_.begin(), ks.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.addr < b.addr; });
  return ks;
}

std::optional<Lookup> KernelSymbols::lookup(uint64_t addr) const {
  auto it =
      std::upper_bound(symbols_.begin(), symbols_.end(), addr, [](uint64_t a, const Symbol& s) { return a < s.addr; });
  if (it == symbols_.begin()) return std::nullopt;
  auto sym = std::prev(it);
  // Aliases share an address; kallsyms reports the first of them.
  while (sym != symbols_.begin() && std::prev(sym)->addr == sym->addr) --sym;
  auto next = it;
  while (next != symbols_.end() && next->addr == sym->addr) ++next;
  Lookup l;
  l.symbol = &*sym;
  l.offset = addr - sym->addr;
  l.size = next == symbols_.end() ? 0 : next->addr - sym->addr;
  // Past the last symbol nothing says where it ends. A BPF program is the
  // exception that matters: on a machine running no other BPF, histd's
  // own program is the highest symbol, and it is the first frame of every
  // stack its events take (a frame to leave out, is_tracing_frame). Its
  // image lies within one pack of JIT images (2 MiB), so an address that
  // close above it is taken for it; its size stays unknown (0).
  constexpr uint64_t kBpfPackBytes = uint64_t{2} << 20;
  if (next == symbols_.end() && l.offset > 0 && (sym->module != "bpf" || l.offset >= kBpfPackBytes))
    return std::nullopt;
  return l;
}

std::string format_symbol(const std::optional<Lookup>& l, bool with_offset) {
  if (!l) return {};
  std::string s = l->symbol->name;
  if (with_offset) s += l->size ? fmt::format("+{:#x}/{:#x}", l->offset, l->size) : fmt::format("+{:#x}", l->offset);
  if (!l->symbol->module.empty()) s += " [" + l->symbol->module + "]";
  return s;
}

namespace {

KernelSymbols read_kallsyms() {
  std::ifstream in("/proc/kallsyms");
  std::stringstream ss;
  ss << in.rdbuf();
  return KernelSymbols::parse(ss.str());
}

}  // namespace

void SystemResolver::reload() {
  std::call_once(loaded_, [] {});
  kallsyms_ = read_kallsyms();
  read_ = true;
}

const KernelSymbols& SystemResolver::kallsyms() const {
  std::call_once(loaded_, [this] {
    kallsyms_ = read_kallsyms();
    read_ = true;
  });
  return kallsyms_;
}

std::string SystemResolver::symbol(uint64_t addr) const { return format_symbol(kallsyms().lookup(addr), false); }

std::string SystemResolver::symbol_offset(uint64_t addr) const { return format_symbol(kallsyms().lookup(addr), true); }

bool is_tracing_frame(const std::optional<Lookup>& l) {
  if (!l) return false;
  const std::string& name = l->symbol->name;
  return l->symbol->module == "bpf" || name.starts_with("bpf_trace_run") || name.starts_with("__bpf_trace_") ||
         name.starts_with("__traceiter_");
}

bool SystemResolver::is_tracing_frame(uint64_t addr) const {
  return symbols::is_tracing_frame(kallsyms().lookup(addr));
}

std::string SystemResolver::syscall_name(uint64_t nr) const {
  if (nr > 0xffff) return {};
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, static_cast<int>(nr));
  if (!name) return {};
  std::string s = std::string("sys_") + name;
  std::free(name);
  return s;
}

}  // namespace histd::symbols
