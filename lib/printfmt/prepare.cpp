// SPDX-License-Identifier: GPL-2.0-only
// The print fmt rewritten before libtraceevent parses it: the kernel's
// pointer conversions are printed by the Printer itself (see printfmt.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "histd/catalog.h"
#include "histd/printfmt.h"

namespace histd::printfmt {

namespace {

// What the Printer does with a %p conversion's extension letter; 0: leave
// it to libtraceevent (%pI4, %pM, ...).
char pointer_kind(char ext) {
  switch (ext) {
    case 'S':
    case 'B':
    case 'F':
      return 'S';  // symbol+offset/size [module]
    case 's':
    case 'f':
      return 's';  // symbol [module]
    case 'x':
      return 'x';  // the address itself
    case 'K':
      return 'p';  // hashed, as plain %p
    default:
      return std::isalnum(static_cast<unsigned char>(ext)) ? 0 : 'p';
  }
}

// An argument with the enum constants it names replaced by their values:
// identifiers outside string literals, not a field (REC->name), not a
// function called (__print_symbolic(...)).
std::string resolve_enums(const std::string& arg, const Enums& enums) {
  if (enums.empty()) return arg;
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < arg.size();) {
    const char c = arg[i];
    if (quoted || c == '"') {
      if (c == '"' && quoted)
        quoted = false;
      else if (c == '"')
        quoted = true;
      else if (c == '\\' && i + 1 < arg.size())
        out += arg[i++];
      out += arg[i++];
      continue;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      out += arg[i++];
      continue;
    }
    size_t j = i;
    while (j < arg.size() && (std::isalnum(static_cast<unsigned char>(arg[j])) || arg[j] == '_')) ++j;
    const std::string_view word(arg.data() + i, j - i);
    const bool field = i >= 2 && arg.compare(i - 2, 2, "->") == 0;
    const size_t next = arg.find_first_not_of(' ', j);
    const bool called = next != std::string::npos && arg[next] == '(';
    const auto found = field || called ? enums.end() : enums.find(word);
    out += found != enums.end() ? std::to_string(found->second) : std::string(word);
    i = j;
  }
  return out;
}

// C's precedence of the binary operators constant_value() takes.
int precedence(const std::string& op) {
  if (op == "*" || op == "/") return 6;
  if (op == "+" || op == "-") return 5;
  if (op == "<<" || op == ">>") return 4;
  if (op == "&") return 3;
  return op == "^" ? 2 : 1;
}

// Replaces the last two values by the last operator applied to them; false
// when there are not two.
bool apply_last(std::vector<uint64_t>& values, std::vector<std::string>& ops) {
  if (values.size() < 2) return false;
  const uint64_t b = values.back();
  values.pop_back();
  uint64_t& a = values.back();
  const std::string op = ops.back();
  ops.pop_back();
  if (op == "*")
    a *= b;
  else if (op == "/")
    a = b ? a / b : 0;
  else if (op == "+")
    a += b;
  else if (op == "-")
    a -= b;
  else if (op == "<<")
    a = b < 64 ? a << b : 0;
  else if (op == ">>")
    a = b < 64 ? a >> b : 0;
  else if (op == "&")
    a &= b;
  else if (op == "^")
    a ^= b;
  else
    a |= b;
  return true;
}

// The integer literal at text[i], i moved past it; nullopt for anything
// else.
std::optional<uint64_t> read_literal(std::string_view text, size_t& i) {
  if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  size_t used = 0;
  const std::string digits(text.substr(i, text.find_first_of(" *+-/<>&^|", i) - i));
  const uint64_t v = std::stoull(digits, &used, 0);
  if (used != digits.size()) return std::nullopt;  // a suffix (1UL) or a float
  i += used;
  return v;
}

// The binary operator at text[i]; "" for anything else.
std::string read_operator(std::string_view text, size_t i) {
  std::string op(1, text[i]);
  if ((op == "<" || op == ">") && i + 1 < text.size() && text[i + 1] == text[i]) op += text[i];
  if (std::string_view("*/+-&^|").find(op) == std::string_view::npos && op != "<<" && op != ">>") return "";
  return op;
}

// The value of a constant expression of integer literals and the binary
// operators * / + - << >> & ^ | (C's precedence); nullopt for anything else.
std::optional<uint64_t> constant_value(std::string_view text) {
  std::vector<uint64_t> values;
  std::vector<std::string> ops;
  bool want_value = true;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    if (want_value) {
      const std::optional<uint64_t> v = read_literal(text, i);
      if (!v) return std::nullopt;
      values.push_back(*v);
      want_value = false;
      continue;
    }
    const std::string op = read_operator(text, i);
    if (op.empty()) return std::nullopt;
    while (!ops.empty() && precedence(ops.back()) >= precedence(op))
      if (!apply_last(values, ops)) return std::nullopt;
    ops.push_back(op);
    i += op.size();
    want_value = true;
  }
  if (want_value) return std::nullopt;
  while (!ops.empty())
    if (!apply_last(values, ops)) return std::nullopt;
  return values.size() == 1 ? std::optional<uint64_t>(values[0]) : std::nullopt;
}

// Parenthesized constant expressions folded into their value, innermost
// first: libtraceevent mis-evaluates some (timer_start's
// `REC->flags & (0x00040000 | 0x00080000 | ...)` as if it had no
// parentheses), and the kernel computed them at build time anyway.
std::string fold_constants(std::string arg) {
  size_t from = 0;
  for (size_t close; (close = arg.find(')', from)) != std::string::npos;) {
    from = close + 1;
    const size_t open = arg.rfind('(', close);
    if (open == std::string::npos || std::count(arg.begin(), arg.begin() + static_cast<long>(open), '"') % 2)
      continue;  // inside a string literal
    const auto v = constant_value(std::string_view(arg).substr(open + 1, close - open - 1));
    if (!v) continue;
    const std::string text = fmt::format("{:#x}", *v);
    arg.replace(open, close - open + 1, text);
    from = open + 1;
  }
  return arg;
}

}  // namespace

std::string prepare_format(std::string_view format_text, std::string_view nonce, const Enums& enums) {
  const std::string_view key = "print fmt: \"";
  const size_t at = format_text.find(key);
  if (at == std::string_view::npos) return std::string(format_text);
  const size_t quote = at + key.size() - 1;
  const auto parsed = catalog::parse_print_fmt(format_text.substr(quote));
  if (!parsed) return std::string(format_text);
  std::vector<std::string> args = parsed->args;
  std::string out(format_text.substr(0, quote + 1));
  size_t copied = 0;
  for (const catalog::PrintConversion& c : parsed->conversions) {
    const char kind = c.conversion == 'p' ? pointer_kind(c.extension ? c.extension : ' ') : 0;
    if (!kind || c.arg >= args.size()) continue;
    out += parsed->format.substr(copied, c.begin - copied);
    out += fmt::format("{{{{histd:{}:{}:%llx}}}}", nonce, kind);
    args[c.arg] = fmt::format(" (unsigned long long)({})", args[c.arg]);
    copied = c.end;
  }
  out += parsed->format.substr(copied);
  out += '"';
  for (const std::string& a : args) out += "," + fold_constants(resolve_enums(a, enums));
  out += format_text.substr(quote + parsed->args_end);
  return out;
}

}  // namespace histd::printfmt
