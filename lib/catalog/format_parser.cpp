// SPDX-License-Identifier: GPL-2.0-only
// Parser for tracefs `format` files.
//
// The file is a few header lines, the fields (one per line), and the print
// format, which runs to the end of the file (a few ext4 events put raw
// newlines inside it). The parser takes any text: whatever is not in that
// shape is rejected with the line number, never a crash, because the same
// code reads format files that arrive from histd's users (`histctl check`).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "histd/catalog.h"

namespace histd::catalog {

namespace {

constexpr std::string_view kDataLoc = "__data_loc";
constexpr std::string_view kRelLoc = "__rel_loc";
constexpr std::string_view kFieldTag = "field:";
constexpr std::string_view kPrintFmtTag = "print fmt:";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Decimal only: the kernel prints these with %u/%d, and a lenient parse
// ("+8", "0x8", "8abc") would hide a file we do not understand.
std::optional<uint32_t> parse_u32(std::string_view s) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

Unexpected<Error> invalid(size_t line_no, std::string what) {
  return fail(ErrorKind::Invalid, EINVAL, "format line " + std::to_string(line_no) + ": " + what);
}

// The kernel calls an array a string when its element type is a char
// (filter_assign_type: "char" inside the type); u8/__u8 arrays are bytes.
bool is_char_type(std::string_view type) {
  type = trim(type);
  if (type.starts_with("const ")) type = trim(type.substr(6));
  return type == "char" || type == "signed char" || type == "unsigned char";
}

// A field declaration as the kernel prints it, split into its parts.
struct Decl {
  std::string type;
  std::string name;
  FieldKind kind = FieldKind::Integer;
  uint32_t array_len = 0;
};

// Splits "<type> <name>" at the trailing identifier. Works for pointers
// written without a space ("const char *buf") as well as with one.
bool split_type_and_name(std::string_view base, std::string_view& type, std::string_view& name) {
  base = trim(base);
  size_t start = base.size();
  while (start > 0 && is_ident_char(base[start - 1])) --start;
  name = base.substr(start);
  type = trim(base.substr(0, start));
  return !name.empty() && !(name.front() >= '0' && name.front() <= '9') && !type.empty();
}

// Finds the '[' that opens the bracket group ending `s` (which ends in ']').
// Old kernels printed array lengths as written in the source, so the group
// may nest: "u8 saddr[sizeof(x[2])]".
std::optional<size_t> matching_open_bracket(std::string_view s) {
  int depth = 0;
  for (size_t i = s.size(); i > 0; --i) {
    char c = s[i - 1];
    if (c == ']') {
      ++depth;
    } else if (c == '[') {
      if (--depth == 0) return i - 1;
    }
  }
  return std::nullopt;
}

Expected<Decl> parse_dynamic_decl(std::string_view loc, std::string_view rest, uint32_t size, size_t line_no) {
  std::string_view type;
  std::string_view name;
  if (!split_type_and_name(rest, type, name)) {
    return invalid(line_no,
                   "cannot split '" + std::string(loc) + " " + std::string(rest) + "' into a type and a field name");
  }
  // The record holds a u32 locator (len << 16 | offset); the data lives
  // elsewhere, so any other size means we would read the wrong bytes.
  if (size != 4) {
    return invalid(line_no, "field '" + std::string(name) + "': " + std::string(loc) + " field must have size 4, not " +
                                std::to_string(size));
  }
  Decl d;
  d.name = std::string(name);
  d.type = std::string(loc) + " " + std::string(type);
  // Only "char[]" is a string; "u64[]", "unsigned long[]" or "cpumask_t" are
  // dynamic arrays, usable by nothing in the hist language but printing.
  bool is_string = type.ends_with("[]") && is_char_type(type.substr(0, type.size() - 2));
  if (!is_string) {
    d.kind = FieldKind::Other;
  } else {
    d.kind = loc == kDataLoc ? FieldKind::DynamicString : FieldKind::RelString;
  }
  return d;
}

Expected<Decl> parse_decl(std::string_view decl, uint32_t size, size_t line_no) {
  decl = trim(decl);
  if (decl.empty()) return invalid(line_no, "empty field declaration");

  for (std::string_view loc : {kDataLoc, kRelLoc}) {
    if (decl.starts_with(loc) && decl.size() > loc.size() && is_space(decl[loc.size()])) {
      return parse_dynamic_decl(loc, decl.substr(loc.size()), size, line_no);
    }
  }

  std::string_view base = decl;
  std::optional<std::string_view> bracket;
  if (decl.back() == ']') {
    auto open = matching_open_bracket(decl);
    if (!open) return invalid(line_no, "unbalanced ']' in '" + std::string(decl) + "'");
    bracket = decl.substr(*open + 1, decl.size() - *open - 2);
    base = decl.substr(0, *open);
  }

  std::string_view type;
  std::string_view name;
  if (!split_type_and_name(base, type, name)) {
    return invalid(line_no, "cannot split '" + std::string(decl) + "' into a type and a field name");
  }
  if (type.find_first_of("[]") != std::string_view::npos) {
    return invalid(line_no, "field '" + std::string(name) + "': unexpected '[' in type '" + std::string(type) + "'");
  }

  Decl d;
  d.name = std::string(name);
  if (!bracket) {
    d.type = std::string(type);
    // Pointers are numbers here, as in the kernel: nothing dereferences them.
    bool integer_size = size == 1 || size == 2 || size == 4 || size == 8;
    d.kind = integer_size ? FieldKind::Integer : FieldKind::Other;
    return d;
  }

  d.type = std::string(type) + "[" + std::string(*bracket) + "]";
  bool is_char = is_char_type(type);
  d.kind = is_char ? FieldKind::CharArray : FieldKind::Array;
  if (auto n = parse_u32(trim(*bracket))) {
    d.array_len = *n;
  } else if (!trim(*bracket).empty()) {
    // A length the kernel printed as source text (a macro or sizeof on old
    // kernels). For chars the byte size is the length; for other element
    // types it is unknown, and 0 says so.
    d.array_len = is_char ? size : 0;
  }
  // An empty "[]" (ftrace/print's `char buf[]`, size 0) is a flexible array:
  // array_len stays 0 and the data runs from `offset` to the end of the
  // record. Readers must bound such a string by the record, not by `size`.
  return d;
}

// Parses the part of a field line after "field:".
Expected<Field> parse_field(std::string_view body, size_t line_no) {
  size_t semi = body.find(';');
  if (semi == std::string_view::npos) {
    return invalid(line_no, "missing ';' after the field declaration");
  }
  std::string_view decl_text = body.substr(0, semi);
  std::string_view attrs = body.substr(semi + 1);

  std::optional<uint32_t> offset;
  std::optional<uint32_t> size;
  bool is_signed = false;  // absent on kernels older than 2.6.32
  while (!attrs.empty()) {
    size_t end = attrs.find(';');
    std::string_view item = trim(attrs.substr(0, end));
    attrs = end == std::string_view::npos ? std::string_view() : attrs.substr(end + 1);
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return invalid(line_no, "expected key:value, got '" + std::string(item) + "'");
    }
    std::string_view key = trim(item.substr(0, colon));
    std::string_view text = trim(item.substr(colon + 1));
    // Unknown keys are skipped so that a future kernel adding one still works.
    if (key != "offset" && key != "size" && key != "signed") continue;
    auto value = parse_u32(text);
    if (!value || (key == "signed" && *value > 1)) {
      return invalid(line_no, "bad " + std::string(key) + " value '" + std::string(text) + "'");
    }
    if (key == "offset") {
      offset = *value;
    } else if (key == "size") {
      size = *value;
    } else {
      is_signed = *value == 1;
    }
  }
  if (!offset) return invalid(line_no, "missing offset");
  if (!size) return invalid(line_no, "missing size");
  if (uint64_t{*offset} + *size > std::numeric_limits<uint32_t>::max()) {
    return invalid(line_no, "offset + size overflows");
  }

  auto decl = parse_decl(decl_text, *size, line_no);
  if (!decl) return unexpected(std::move(decl).error());

  Field f;
  f.name = std::move(decl->name);
  f.type = std::move(decl->type);
  f.offset = *offset;
  f.size = *size;
  f.is_signed = is_signed;
  f.kind = decl->kind;
  f.array_len = decl->array_len;
  return f;
}

// Takes "key: value" apart when `line` starts with `key:`.
std::optional<std::string_view> header_value(std::string_view line, std::string_view key) {
  if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') {
    return std::nullopt;
  }
  return trim(line.substr(key.size() + 1));
}

}  // namespace

const Field* EventFormat::find(std::string_view field_name) const {
  auto it = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.name == field_name; });
  return it == fields.end() ? nullptr : &*it;
}

uint32_t EventFormat::record_size() const {
  uint64_t end = 0;
  for (const Field& f : fields) end = std::max(end, uint64_t{f.offset} + f.size);
  // Hand-built formats may not respect the parser's overflow check.
  return static_cast<uint32_t>(std::min<uint64_t>(end, std::numeric_limits<uint32_t>::max()));
}

namespace {

// The lines before the fields.
struct Header {
  bool name = false;
  bool id = false;
};

// One line of the header into `fmt`: true at its end ("format:").
Expected<bool> header_line(std::string_view line, size_t line_no, Header& seen, EventFormat& fmt) {
  if (auto v = header_value(line, "name")) {
    if (seen.name) return invalid(line_no, "duplicate name line");
    if (v->empty()) return invalid(line_no, "empty event name");
    fmt.name = std::string(*v);
    seen.name = true;
    return false;
  }
  if (auto id = header_value(line, "ID")) {
    if (seen.id) return invalid(line_no, "duplicate ID line");
    auto n = parse_u32(*id);
    if (!n) return invalid(line_no, "bad ID '" + std::string(*id) + "'");
    fmt.id = *n;
    seen.id = true;
    return false;
  }
  if (line == "format:") {
    if (!seen.name || !seen.id) return invalid(line_no, "'format:' before name and ID");
    return true;
  }
  return invalid(line_no, "expected 'name:', 'ID:' or 'format:', got '" + std::string(line.substr(0, 40)) + "'");
}

// One line after "format:" into `fmt` (`line` lies in `text`): true at
// "print fmt:", which ends the fields.
Expected<bool> fields_line(std::string_view text, std::string_view line, size_t line_no, bool in_common_block,
                           EventFormat& fmt) {
  if (line.starts_with(kFieldTag)) {
    auto field = parse_field(line.substr(kFieldTag.size()), line_no);
    if (!field) return unexpected(std::move(field).error());
    if (fmt.find(field->name) != nullptr) {
      return invalid(line_no, "duplicate field '" + field->name + "'");
    }
    field->is_common = in_common_block && field->name.starts_with("common_");
    fmt.fields.push_back(std::move(*field));
    return false;
  }
  if (line.starts_with(kPrintFmtTag)) {
    // The print format may itself contain newlines, so it takes the rest
    // of the file, less the newline that ends the file.
    const size_t start = static_cast<size_t>(line.data() - text.data()) + kPrintFmtTag.size();
    std::string_view rest = text.substr(start);
    if (rest.starts_with(' ')) rest.remove_prefix(1);
    if (rest.ends_with('\n')) rest.remove_suffix(1);
    fmt.print_fmt = std::string(rest);
    return true;
  }
  return invalid(line_no, "expected 'field:' or 'print fmt:', got '" + std::string(line.substr(0, 40)) + "'");
}

}  // namespace

Expected<EventFormat> parse_format(std::string_view text, std::string_view system) {
  enum class State { Header, Fields };
  State state = State::Header;
  EventFormat fmt;
  fmt.system = std::string(system);
  Header header;
  bool have_print_fmt = false;
  // The common fields form the first block; a blank line ends it.
  bool in_common_block = true;

  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t line_end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view raw = text.substr(pos, line_end - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    std::string_view line = trim(raw);
    if (line.empty()) {
      if (state == State::Fields && !fmt.fields.empty()) in_common_block = false;
      continue;
    }

    if (state == State::Header) {
      auto done = header_line(line, line_no, header, fmt);
      if (!done) return unexpected(std::move(done).error());
      if (*done) state = State::Fields;
      continue;
    }

    auto print_fmt = fields_line(text, line, line_no, in_common_block, fmt);
    if (!print_fmt) return unexpected(std::move(print_fmt).error());
    if (*print_fmt) {
      have_print_fmt = true;
      break;
    }
  }

  if (state != State::Fields) return invalid(line_no, "missing 'format:' line");
  if (fmt.fields.empty()) return invalid(line_no, "no fields");
  // Every kernel prints it; a file without it was cut short.
  if (!have_print_fmt) return invalid(line_no, "missing 'print fmt:' line");
  fmt.text = std::string(text);
  fmt.syscall = syscall_event(fmt);
  fmt.source = event_source(fmt);
  mark_kernel_addresses(fmt);
  return fmt;
}

}  // namespace histd::catalog
