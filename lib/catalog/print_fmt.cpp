// SPDX-License-Identifier: GPL-2.0-only
// An event's print fmt read as the kernel's printf reads it: which
// argument each conversion prints (catalog::parse_print_fmt), and so which
// fields the kernel prints as kernel addresses (mark_kernel_addresses).
#include <cctype>
#include <string>
#include <vector>

#include "histd/catalog.h"

namespace histd::catalog {

namespace {

// The arguments after the format string, split at commas outside
// parentheses, braces and string literals.
std::vector<std::string> split_args(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      cur += c;
      if (c == '\\' && i + 1 < text.size())
        cur += text[++i];
      else if (c == '"')
        quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(std::move(cur));
  return out;
}

// The conversions of a format string, each with the index of the argument
// it prints (a '*' width or precision takes an argument of its own).
std::vector<PrintConversion> conversions_of(std::string_view fmt) {
  std::vector<PrintConversion> out;
  size_t arg = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') continue;
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < fmt.size() && std::string_view("-+ #0").find(fmt[j]) != std::string_view::npos) ++j;
    for (; j < fmt.size() && (std::isdigit(static_cast<unsigned char>(fmt[j])) || fmt[j] == '.' || fmt[j] == '*'); ++j)
      if (fmt[j] == '*') ++arg;
    while (j < fmt.size() && std::string_view("hlzjtL").find(fmt[j]) != std::string_view::npos) ++j;
    if (j >= fmt.size()) break;
    PrintConversion c;
    c.begin = i;
    c.conversion = fmt[j];
    c.end = j + 1;
    c.arg = arg++;
    if (c.conversion == 'p' && j + 1 < fmt.size() && std::isalnum(static_cast<unsigned char>(fmt[j + 1]))) {
      c.extension = fmt[j + 1];
      // A letter is the conversion's own (%pS); a digit is text after it.
      if (std::isalpha(static_cast<unsigned char>(c.extension))) c.end = j + 2;
    }
    out.push_back(c);
    i = c.end - 1;
  }
  return out;
}

// Whether `arg` reads field `name` (REC->name, not REC->name_more).
bool reads_field(std::string_view arg, std::string_view name) {
  for (size_t at = arg.find("REC->"); at != std::string_view::npos; at = arg.find("REC->", at + 1)) {
    const std::string_view rest = arg.substr(at + 5);
    if (!rest.starts_with(name)) continue;
    const char next = rest.size() > name.size() ? rest[name.size()] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_') return true;
  }
  return false;
}

}  // namespace

std::optional<PrintFmt> parse_print_fmt(std::string_view text) {
  if (!text.starts_with('"')) return std::nullopt;
  size_t end = 1;
  while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
  if (end >= text.size()) return std::nullopt;
  PrintFmt p;
  p.format = text.substr(1, end - 1);
  p.args_end = std::min(text.find('\n', end), text.size());
  std::string_view rest = text.substr(end + 1, p.args_end - end - 1);  // ", a, b"
  if (rest.starts_with(",")) rest.remove_prefix(1);
  if (rest.find_first_not_of(" \t") != std::string_view::npos) p.args = split_args(rest);
  p.conversions = conversions_of(p.format);
  return p;
}

bool prints_address(const PrintConversion& c) {
  if (c.conversion != 'p') return false;
  // %pS %ps %pB %pF %pf %px %pK, and %p alone: an address; the other
  // extensions (%pI4, %pM, %pU, ...) print what the pointer points to.
  return c.extension == 0 || std::string_view("SsBFfxK").find(c.extension) != std::string_view::npos;
}

void mark_kernel_addresses(EventFormat& format) {
  // A syscall's pointer arguments are the calling program's addresses,
  // which the kernel prints as numbers (0x%lx).
  const bool user_pointers = format.source == EventSource::RawSyscall || format.system == "syscalls";
  const auto p = parse_print_fmt(format.print_fmt);
  const bool synthetic = format.system == kSynthSystem;
  for (Field& f : format.fields) {
    f.kernel_address =
        (!user_pointers && f.type.find('*') != std::string::npos) || (synthetic && synthetic_address_type(f.type));
    if (!p) continue;
    for (const PrintConversion& c : p->conversions)
      if (prints_address(c) && c.arg < p->args.size() && reads_field(p->args[c.arg], f.name)) f.kernel_address = true;
  }
}

}  // namespace histd::catalog
