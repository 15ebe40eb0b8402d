// SPDX-License-Identifier: GPL-2.0-only
// A kprobe event's definition as kprobe_events lists it: the kernel has
// parsed and checked the command already (histd's kprobe_events writes go to
// the kernel's), so this reads the kernel's own listing, and says which parts
// histd's programs cannot compute.
#include <fmt/format.h>

#include <algorithm>

#include "histd/catalog.h"
#include "histd/text.h"

namespace histd::catalog {

namespace {

Unexpected<Error> invalid(std::string why) { return fail(ErrorKind::Invalid, EINVAL, std::move(why)); }

// As the kernel reads them (kstrtoul, base 0).
std::optional<uint64_t> parse_number(std::string_view s) { return parse_u64(s); }

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t begin = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > begin) out.push_back(s.substr(begin, i - begin));
  }
  return out;
}

// -42, +8, 16: a signed offset.
std::optional<int64_t> parse_offset(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  auto v = parse_number(s);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

// SYM+OFFS or SYM-OFFS (@SYM+OFFS): the symbol and its offset.
std::pair<std::string, int64_t> split_symbol(std::string_view s) {
  const size_t sign = s.find_first_of("+-");
  if (sign == std::string_view::npos) return {std::string(s), 0};
  auto off = parse_offset(s.substr(sign));
  if (!off) return {std::string(s), 0};
  return {std::string(s.substr(0, sign)), *off};
}

Expected<ProbeFetch> parse_base(std::string_view s) {
  ProbeFetch f;
  if (s.starts_with('%') && s.size() > 1) {
    f.base = ProbeFetch::Base::Register;
    f.reg = std::string(s.substr(1));
  } else if (s == "$retval") {
    f.base = ProbeFetch::Base::ReturnValue;
  } else if (s == "$comm" || s == "$COMM") {
    f.base = ProbeFetch::Base::Comm;
  } else if (s == "$stack") {
    f.base = ProbeFetch::Base::StackPointer;
  } else if (s.starts_with("$stack")) {
    auto n = parse_number(s.substr(6));
    if (!n || *n > 4096) return invalid(fmt::format("'{}': no such stack entry", s));
    f.base = ProbeFetch::Base::StackPointer;
    f.derefs.push_back({static_cast<int64_t>(*n * 8), false});
  } else if (s.starts_with("$arg") && s.size() > 4 && std::isdigit(static_cast<unsigned char>(s[4]))) {
    auto n = parse_number(s.substr(4));
    if (!n || *n < 1 || *n > 128) return invalid(fmt::format("'{}': no such argument", s));
    f.base = ProbeFetch::Base::Argument;
    f.index = static_cast<uint32_t>(*n);
  } else if (s.starts_with('\\') && s.size() > 1) {
    auto v = parse_offset(s.substr(1));
    if (!v) return invalid(fmt::format("'{}': histd takes only numbers as immediate values", s));
    f.base = ProbeFetch::Base::Immediate;
    f.immediate = *v;
  } else if (s.starts_with('@') && s.size() > 1) {
    if (auto addr = parse_number(s.substr(1))) {
      f.base = ProbeFetch::Base::Immediate;
      f.immediate = static_cast<int64_t>(*addr);
    } else {
      f.base = ProbeFetch::Base::Symbol;
      std::tie(f.symbol, f.immediate) = split_symbol(s.substr(1));
    }
    f.derefs.push_back({0, false});
  } else if (s.starts_with('$') && s.size() > 1 && std::all_of(s.begin() + 1, s.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
             })) {
    // An eprobe's field of the attached event (what has one is checked
    // against that event's format).
    f.base = ProbeFetch::Base::EventField;
    f.symbol = std::string(s.substr(1));
  } else {
    return invalid(
        fmt::format("'{}': histd computes registers, $argN, $retval, $stack, $comm, @ADDR, @SYM, "
                    "immediates and dereferences of them, not BTF names",
                    s));
  }
  return f;
}

// FETCHARG without its type: a base, or +|-[u]OFFS(FETCHARG).
Expected<ProbeFetch> parse_fetch(std::string_view s) {
  if (s.empty() || (s[0] != '+' && s[0] != '-')) return parse_base(s);
  const size_t open = s.find('(');
  if (open == std::string_view::npos || !s.ends_with(')'))
    return invalid(fmt::format("'{}': a dereference needs (...)", s));
  const bool user = open > 1 && s[1] == 'u';
  const size_t digits = user ? 2 : 1;
  auto magnitude = parse_number(s.substr(digits, open - digits));
  if (!magnitude || *magnitude > static_cast<uint64_t>(INT64_MAX)) return invalid(fmt::format("'{}': no offset", s));
  auto inner = parse_fetch(s.substr(open + 1, s.size() - open - 2));
  if (!inner) return inner;
  const int64_t offset = static_cast<int64_t>(*magnitude);
  inner->derefs.push_back({s[0] == '-' ? -offset : offset, user});
  return inner;
}

bool supported_type(std::string_view t) {
  static constexpr std::string_view kTypes[] = {"u8", "u16", "u32", "u64", "s8",   "s16",    "s32",     "s64",
                                                "x8", "x16", "x32", "x64", "char", "string", "ustring", "symbol"};
  return t.empty() || std::find(std::begin(kTypes), std::end(kTypes), t) != std::end(kTypes);
}

}  // namespace

Expected<ProbeArg> parse_probe_arg(std::string_view s) {
  const size_t eq = s.find('=');
  if (eq == std::string_view::npos || eq == 0) return invalid(fmt::format("'{}': an argument has a name", s));
  ProbeArg a;
  a.name = std::string(s.substr(0, eq));
  std::string_view fetch = s.substr(eq + 1), type;
  // The type follows the last ':' outside the dereferences' parentheses.
  if (const size_t colon = fetch.rfind(':');
      colon != std::string_view::npos && fetch.find(')', colon) == std::string_view::npos) {
    type = fetch.substr(colon + 1);
    fetch = fetch.substr(0, colon);
  }
  if (!supported_type(type))
    return invalid(
        fmt::format("'{}': histd computes the types u8..u64, s8..s64, x8..x64, char, string, ustring and "
                    "symbol, not {}",
                    s, type));
  auto f = parse_fetch(fetch);
  if (!f) return unexpected(std::move(f).error());
  a.fetch = std::move(*f);
  a.fetch.type = std::string(type);
  return a;
}

namespace {

// Where the probe is: [MOD:]SYM[+OFFS][%return] or 0xADDR (kprobes),
// /PATH:0xOFFS[(0xREF_CTR)][%return] (uprobes).
Status parse_place(std::string_view where, ProbeDefinition& d) {
  if (where.ends_with("%return")) {
    d.is_return = true;
    where.remove_suffix(7);
  }
  if (const size_t at = where.rfind(':'); where.starts_with('/') && at != std::string_view::npos) {
    d.uprobe = true;
    d.path = std::string(where.substr(0, at));
    auto v = parse_number(where.substr(at + 1).substr(0, where.substr(at + 1).find('(')));
    if (!v) return invalid(fmt::format("'{}': no file offset", where));
    d.offset = *v;
  } else if (auto addr = where.starts_with("0x") ? parse_number(where) : std::nullopt) {
    d.address = *addr;
  } else {
    auto [sym, off] = split_symbol(where);
    if (off < 0) return invalid(fmt::format("'{}': a negative offset", where));
    d.symbol = std::move(sym);
    d.offset = static_cast<uint64_t>(off);
  }
  return ok_status();
}

}  // namespace

Expected<ProbeDefinition> parse_probe_definition(std::string_view line) {
  const std::vector<std::string_view> words = split_words(line);
  if (words.size() < 2) return invalid(fmt::format("'{}': not a probe definition", line));
  std::string_view head = words[0];
  ProbeDefinition d;
  if (head.starts_with('r'))
    d.is_return = true;
  else if (!head.starts_with('p'))
    return invalid(fmt::format("'{}': not a probe definition", head));
  const size_t colon = head.find(':'), slash = head.find('/');
  if (colon == std::string_view::npos || slash == std::string_view::npos || slash < colon)
    return invalid(fmt::format("'{}': no GROUP/EVENT", head));
  d.group = std::string(head.substr(colon + 1, slash - colon - 1));
  d.event = std::string(head.substr(slash + 1));
  if (auto st = parse_place(words[1], d); !st) return unexpected(std::move(st).error());
  for (size_t i = 2; i < words.size(); ++i) {
    auto arg = parse_probe_arg(words[i]);
    if (!arg) return unexpected(std::move(arg).error());
    d.args.push_back(std::move(*arg));
  }
  return d;
}

}  // namespace histd::catalog
