// SPDX-License-Identifier: GPL-2.0-only
// Kernel event records as the kernel's trace shows them: an event's print
// fmt (the last line of its format file) applied to a record, by
// libtraceevent — the library trace-cmd and perf use to print the records
// of tracefs — so that histd need not interpret the print fmt language
// (REC->field, __get_str(), __print_symbolic(), __print_flags(), ...).
//
// Where libtraceevent prints otherwise than the kernel, the Printer prints:
//   %pS %pB %pF  "name+0xoff/0xsize [module]", "0x<addr>" when unknown
//   %ps %pf      "name [module]"
//   %p %pK       a hash of the address (keyed per Printer), zero-padded to
//                16 digits as the kernel's hashed pointers; NULL and error
//                pointers as they are. histd never shows a heap address
//                that the kernel would hide.
//   syscalls     "sys_read(fd: 3, buf: 0x7ffe..., count: 0x340)" (values
//                under 10 in decimal) and "sys_read -> 0x3", as the kernel's
//                own print_syscall_enter()/_exit() (their print fmt is not
//                what the kernel prints).
// To do so, prepare_format() turns each such conversion into a tag holding
// the value ("{{histd:<nonce>:<kind>:<hex>}}") that the Printer replaces;
// the nonce is random per Printer, so no text in a record can forge one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "histd/result.h"
#include "histd/symbols.h"

struct tep_handle;

namespace histd::printfmt {

// Enum constants by name ("HRTIMER_MODE_ABS" -> 0). A print fmt may name
// them (__print_symbolic(REC->mode, { HRTIMER_MODE_ABS, "ABS" }, ...)) when
// the kernel did not export their values with TRACE_DEFINE_ENUM; the kernel
// knows them, libtraceevent does not.
using Enums = std::map<std::string, int64_t, std::less<>>;

// Every enum constant of the running kernel, from its BTF
// (/sys/kernel/btf/vmlinux); empty without one.
Enums kernel_enums();

// The format file's print fmt with its pointer conversions tagged and the
// enum constants it names replaced by their values (pure).
std::string prepare_format(std::string_view format_text, std::string_view nonce, const Enums& enums = {});

class Printer {
 public:
  // `symbols` (kept for the printer's life; may be null) names kernel
  // addresses printed with %ps / %pS; `enums` gives the values of enum
  // constants print fmts name (kernel_enums()).
  explicit Printer(const symbols::KernelSymbols* symbols = nullptr, Enums enums = {});
  // The same with `enums` shared, not copied: every printer of a histd (a
  // tree's and each instance's) reads the one set (null: none).
  Printer(const symbols::KernelSymbols* symbols, std::shared_ptr<const Enums> enums);
  ~Printer();
  Printer(Printer&&) noexcept;
  Printer& operator=(Printer&&) noexcept;
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;

  // Learns an event from the text of events/<system>/<event>/format;
  // `prefix` goes between its name and its fields in a line (an eprobe's
  // "(SYSTEM.EVENT)", which the kernel prints and its print fmt lacks).
  Status add_event(std::string_view system, std::string_view format_text, std::string_view prefix = {});
  bool knows(uint32_t id) const;
  // Learns the kernel strings that events record by address (a const char *
  // printed with %s: rcu_utilization's "Start scheduler-tick"), from the
  // text of tracefs's printk_formats.
  Status add_printk_formats(std::string_view text);

  // What follows the line header in the kernel's trace for a record
  // (common fields first) of an event added before: "<event>: <fields>",
  // or a system call's own form. ENOENT for an event it does not know.
  // `hide_kernel_addresses`: for a reader who may not see them, a %px
  // address and one no symbol names are hashed as %p's are.
  Expected<std::string> line_text(std::span<const uint8_t> record, bool hide_kernel_addresses = false) const;

 private:
  std::string replace_tags(std::string text, bool hide_kernel_addresses) const;
  std::string pointer_hash(uint64_t addr) const;

  std::unique_ptr<tep_handle, void (*)(tep_handle*)> tep_;
  const symbols::KernelSymbols* symbols_;
  std::shared_ptr<const Enums> enums_;  // never null
  std::string nonce_;
  std::string hash_key_;
  std::map<uint32_t, std::string> syscall_names_;  // event id -> "sys_openat", for syscall events
  std::map<uint32_t, std::string> prefixes_;       // event id -> what precedes its fields
};

}  // namespace histd::printfmt
