// SPDX-License-Identifier: GPL-2.0-only
#include <fmt/format.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "histd/digest.h"
#include "histd/printfmt.h"

namespace histd::printfmt {

namespace {

tep_handle* new_handle() {
  tep_handle* tep = tep_alloc();
  if (!tep) return nullptr;
  // Records come from this machine's kernel.
  tep_set_long_size(tep, static_cast<int>(sizeof(long)));
  tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
  tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
  return tep;
}

std::string random_hex(size_t bytes) {
  std::random_device rd;
  std::string out;
  for (size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", rd() & 0xff);
  return out;
}

uint64_t read_u64(std::span<const uint8_t> record, size_t offset) {
  uint64_t v = 0;
  if (offset + 8 <= record.size()) std::memcpy(&v, record.data() + offset, 8);
  return v;
}

// The kernel's print_syscall_enter() / print_syscall_exit() for a record of
// a syscalls event: the arguments (8 bytes each, after __syscall_nr) by
// name, or the return value.
std::string syscall_text(const tep_event* event, const std::string& name, std::span<const uint8_t> record) {
  if (std::string_view(event->name).starts_with("sys_exit_")) {
    const tep_format_field* ret = tep_find_field(const_cast<tep_event*>(event), "ret");
    return fmt::format("{} -> {:#x}", name, ret ? read_u64(record, ret->offset) : 0);
  }
  std::string out = name + "(";
  bool first = true;
  for (const tep_format_field* f = event->format.fields; f; f = f->next) {
    if (std::string_view(f->name) == "__syscall_nr") continue;
    if (!first) out += ", ";
    first = false;
    const uint64_t v = read_u64(record, f->offset);
    out += v < 10 ? fmt::format("{}: {}", f->name, v) : fmt::format("{}: {:#x}", f->name, v);
  }
  return out + ")";
}

}  // namespace

Printer::Printer(const symbols::KernelSymbols* symbols, Enums enums)
    : Printer(symbols, std::make_shared<const Enums>(std::move(enums))) {}

Printer::Printer(const symbols::KernelSymbols* symbols, std::shared_ptr<const Enums> enums)
    : tep_(new_handle(), tep_free),
      symbols_(symbols),
      enums_(enums ? std::move(enums) : std::make_shared<const Enums>()),
      nonce_(random_hex(8)),
      hash_key_(random_hex(16)) {}

Printer::~Printer() = default;
Printer::Printer(Printer&&) noexcept = default;
Printer& Printer::operator=(Printer&&) noexcept = default;

Status Printer::add_event(std::string_view system, std::string_view format_text, std::string_view prefix) {
  if (!tep_) return fail(ErrorKind::System, ENOMEM, "libtraceevent: no handle");
  const std::string sys(system);
  const std::string prepared = prepare_format(format_text, nonce_, *enums_);
  tep_event* event = nullptr;
  const enum tep_errno rc = tep_parse_format(tep_.get(), &event, prepared.data(), prepared.size(), sys.c_str());
  if (rc != TEP_ERRNO__SUCCESS || !event) {
    char why[128] = {};
    tep_strerror(tep_.get(), rc, why, sizeof(why));
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("libtraceevent refused the format of a {} event: {}", sys, why));
  }
  const std::string_view name(event->name);
  if (!prefix.empty()) prefixes_[static_cast<uint32_t>(event->id)] = std::string(prefix);
  if (system == "syscalls" && (name.starts_with("sys_enter_") || name.starts_with("sys_exit_")))
    syscall_names_[static_cast<uint32_t>(event->id)] =
        "sys_" + std::string(name.substr(name.starts_with("sys_enter_") ? 10 : 9));
  return ok_status();
}

Status Printer::add_printk_formats(std::string_view text) {
  if (!tep_) return fail(ErrorKind::System, ENOMEM, "libtraceevent: no handle");
  const std::string copy(text);
  if (tep_parse_printk_formats(tep_.get(), copy.c_str()) != 0)
    return fail(ErrorKind::Invalid, EINVAL, "libtraceevent refused printk_formats");
  return ok_status();
}

bool Printer::knows(uint32_t id) const { return tep_ && tep_find_event(tep_.get(), static_cast<int>(id)) != nullptr; }

Expected<std::string> Printer::line_text(std::span<const uint8_t> record, bool hide_kernel_addresses) const {
  if (!tep_ || record.size() < 2) return fail(ErrorKind::Invalid, EINVAL, "not a record");
  const uint32_t id = uint32_t(record[0]) | uint32_t(record[1]) << 8;  // common_type, 2 bytes
  tep_event* event = tep_find_event(tep_.get(), static_cast<int>(id));
  if (!event) return fail(ErrorKind::NotFound, ENOENT, fmt::format("no format for event id {}", id));
  if (auto sc = syscall_names_.find(id); sc != syscall_names_.end()) return syscall_text(event, sc->second, record);
  tep_record rec{};
  rec.data = const_cast<uint8_t*>(record.data());
  rec.size = static_cast<int>(record.size());
  trace_seq seq;
  trace_seq_init(&seq);
  tep_print_event(tep_.get(), &seq, &rec, "%s", TEP_PRINT_INFO);
  trace_seq_terminate(&seq);
  std::string body(seq.buffer, seq.len);
  trace_seq_destroy(&seq);
  auto prefix = prefixes_.find(id);
  return std::string(event->name) + ": " + (prefix == prefixes_.end() ? std::string() : prefix->second) +
         replace_tags(std::move(body), hide_kernel_addresses);
}

std::string Printer::pointer_hash(uint64_t addr) const {
  // As the kernel's ptr_to_id(): NULL and error pointers are no addresses.
  if (addr == 0 || addr >= uint64_t(-4095)) return fmt::format("{:016x}", addr);
  std::string data = hash_key_;
  data.append(reinterpret_cast<const char*>(&addr), sizeof(addr));
  const std::array<uint8_t, 32> md = sha256(data);
  if (md == std::array<uint8_t, 32>{}) return "(____ptrval____)";
  uint32_t h = 0;
  std::memcpy(&h, md.data(), 4);
  return fmt::format("{:016x}", h);
}

std::string Printer::replace_tags(std::string text, bool hide_kernel_addresses) const {
  const std::string open = "{{histd:" + nonce_ + ":";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const size_t kind_at = at + open.size();
    const size_t close = text.find("}}", kind_at);
    if (close == std::string::npos || kind_at + 2 > close) break;
    const char kind = text[kind_at];
    const uint64_t value = std::strtoull(text.c_str() + kind_at + 2, nullptr, 16);
    std::string shown;
    if (kind == 'p') {
      shown = pointer_hash(value);
    } else if (kind == 'x') {
      shown = hide_kernel_addresses ? pointer_hash(value) : fmt::format("{:016x}", value);
    } else {
      const auto found = symbols_ ? symbols_->lookup(value) : std::nullopt;
      shown = found && found->symbol  ? symbols::format_symbol(found, kind == 'S')
              : hide_kernel_addresses ? pointer_hash(value)
                                      : fmt::format("{:#x}", value);
    }
    text.replace(at, close + 2 - at, shown);
    at += shown.size();
  }
  return text;
}

}  // namespace histd::printfmt
