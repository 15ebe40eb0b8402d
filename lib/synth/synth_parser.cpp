// SPDX-License-Identifier: GPL-2.0-only
// The synthetic_events command and the format of a synthetic event.
//
// Parsing follows the kernel's create_or_delete_synth_event() step by step,
// because the order of its checks decides which error a bad line gets:
//   1. the part before the first ';' must hold at least three words
//      (name, type, field), else INVALID_CMD at 0 (check_command);
//   2. the name is the text before the first blank or tab; "!name" removes;
//   3. the rest is cut at every ';', each piece into words, and the words are
//      read as "type name" or "unsigned type name" pairs, as many as a piece
//      holds: that is the legacy form without semicolons;
//   4. a field's type is its type word plus the name's "[...]" suffix, and is
//      classified by substring, as synth_field_size() does: anything with
//      "char[" is a string, anything with "long[" a stack.
// Carets differ from the kernel's in one way: errpos() finds the offending
// text with strstr(), so a token whose text also occurs earlier in the line
// gets the earlier position there; here the token's own position is used.
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "histd/synth.h"

#include "histd/text.h"

namespace histd::synth {

namespace {

using Kind = SynthField::Kind;

constexpr uint32_t kHeaderSize = 8;  // struct trace_entry: the common fields
constexpr uint32_t kSlot = 8;        // every other field takes one u64
constexpr uint32_t kLocSize = 4;     // a __data_loc word: (len << 16) | offset
constexpr size_t kMaxCommandBytes = 4096;

// A word of the command and where it starts in the logged command.
using Token = Piece;

// argv_split(): words separated by white space.
std::vector<Token> split_words(const Token& t) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < t.text.size()) {
    while (i < t.text.size() && is_space(t.text[i])) ++i;
    const size_t start = i;
    while (i < t.text.size() && !is_space(t.text[i])) ++i;
    if (i > start) out.push_back(Token{t.text.substr(start, i - start), t.begin + start});
  }
  return out;
}

// is_good_name(): a letter or '_', then letters, digits and '_'.
bool is_good_name(std::string_view name) {
  if (name.empty() || !is_ident_start(name.front())) return false;
  for (char c : name)
    if (!is_ident(c)) return false;
  return true;
}

struct IntegerType {
  std::string_view name;
  uint32_t size;
  std::string_view printf;  // synth_field_fmt()
};

constexpr std::array<IntegerType, 17> kIntegerTypes = {{
    {"s64", 8, "%lld"},
    {"u64", 8, "%llu"},
    {"s32", 4, "%d"},
    {"u32", 4, "%u"},
    {"s16", 2, "%d"},
    {"u16", 2, "%u"},
    {"s8", 1, "%d"},
    {"u8", 1, "%u"},
    {"char", 1, "%d"},
    {"unsigned char", 1, "%u"},
    {"int", 4, "%d"},
    {"unsigned int", 4, "%u"},
    {"long", 8, "%ld"},
    {"unsigned long", 8, "%lu"},
    {"bool", 1, "%d"},
    {"pid_t", 4, "%d"},
    {"gfp_t", 4, "%x"},
}};

const IntegerType* find_integer_type(std::string_view type) {
  for (const IntegerType& t : kIntegerTypes)
    if (t.name == type) return &t;
  return nullptr;
}

bool is_string_type(std::string_view type) { return type.find("char[") != std::string_view::npos; }
bool is_stack_type(std::string_view type) { return type.find("long[") != std::string_view::npos; }

// synth_field_string_size(): N of "char[N]", 0 for "char[]" (a dynamic
// string), -1 for anything else. The length is up to three characters read
// by kstrtouint(.., 0): an optional '+', then decimal, 0x hex or 0 octal;
// so "char[0]" is dynamic too, and "char[0x10]" is refused (four characters).
int string_size(std::string_view type) {
  const size_t start = type.find("char[") + 5;
  const size_t end = type.find(']');  // the first ']' of the whole type
  if (end == std::string_view::npos || end < start || end + 1 != type.size()) return -1;
  std::string_view len = type.substr(start, end - start);
  if (len.size() > 3) return -1;
  if (len.empty()) return 0;
  if (len.front() == '+') len.remove_prefix(1);
  auto n = parse_u64(len);
  if (!n || *n > kStaticStringSlot) return -1;
  return static_cast<int>(*n);
}

// The kernel's synth_field_signed(), applied to the type as the kernel keeps
// it: dynamic fields carry a "__data_loc " prefix there, so they are signed.
bool is_signed_type(std::string_view kernel_type) { return !kernel_type.starts_with("u") && kernel_type != "gfp_t"; }

bool is_common_name(std::string_view name) {
  return name == "common_type" || name == "common_flags" || name == "common_preempt_count" || name == "common_pid";
}

class SynthParser {
 public:
  explicit SynthParser(const std::string& command) : command_(command) {}

  Unexpected<Diagnostic> fail(ErrorCode code, Span span, std::string detail = {}) const {
    return unexpected(Diagnostic{code, span, command_, std::move(detail)});
  }
  Span whole() const { return Span{0, static_cast<uint32_t>(command_.size())}; }

  // __create_synth_event() after the name: the fields, offsets filled in.
  Result<std::vector<SynthField>, Diagnostic> fields(const Token& text) const {
    std::vector<SynthField> out;
    std::vector<Span> name_spans;
    for (const Token& piece : split(text, ';')) {
      const std::vector<Token> words = split_words(piece);
      size_t next = 0;
      while (next < words.size()) {
        Span name_span;
        auto f = field(words, next, name_span);
        if (!f) return unexpected(std::move(f).error());
        if (out.size() == kMaxFields) return fail(ErrorCode::SynthTooManyFields, whole());
        // The kernel takes both of these, and then shows a format file with
        // two fields of one name, which no format parser (histd's included)
        // can read back.
        for (const SynthField& seen : out)
          if (seen.name == f->name) return fail(ErrorCode::SynthInvalidField, name_span, "duplicate field name");
        if (is_common_name(f->name)) return fail(ErrorCode::SynthInvalidField, name_span, "the name of a common field");
        out.push_back(std::move(*f));
      }
    }
    if (out.empty()) return fail(ErrorCode::SynthInvalidCmd, whole());
    uint32_t offset = kHeaderSize;
    for (SynthField& f : out) {
      f.offset = offset;
      offset += f.kind == Kind::StaticString ? kStaticStringSlot : kSlot;
    }
    return out;
  }

 private:
  // parse_synth_field(): one "type name" or "unsigned type name" starting at
  // words[next]; advances `next` past it.
  Result<SynthField, Diagnostic> field(const std::vector<Token>& words, size_t& next, Span& name_span) const {
    const size_t left = words.size() - next;
    const Token& first = words[next];
    std::string prefix;
    Token type_word = first;
    Token name_word;
    if (first.text == "unsigned") {
      if (left < 3) return fail(ErrorCode::SynthIncompleteType, first.span());
      prefix = "unsigned ";
      type_word = words[next + 1];
      name_word = words[next + 2];
      next += 3;
    } else {
      if (left < 2) return fail(ErrorCode::SynthInvalidField, first.span());
      name_word = words[next + 1];
      next += 2;
    }
    name_span = name_word.span();

    const size_t bracket = name_word.text.find('[');
    const std::string_view name = name_word.text.substr(0, bracket);
    const std::string_view array =
        bracket == std::string_view::npos ? std::string_view() : name_word.text.substr(bracket);
    if (!is_good_name(name)) return fail(ErrorCode::SynthBadName, name_word.span());

    SynthField f;
    f.name = std::string(name);
    f.type = prefix + std::string(type_word.text) + std::string(array);
    if (const IntegerType* t = find_integer_type(f.type)) {
      f.kind = Kind::Integer;
      f.size = t->size;
    } else if (is_string_type(f.type)) {
      const int n = string_size(f.type);
      if (n < 0) {
        // A bad length written after the name is an array error; one
        // written in the type word ("char[300] s") is a type error.
        if (!array.empty()) return fail(ErrorCode::SynthInvalidArraySpec, name_word.span());
        return fail(ErrorCode::SynthInvalidType, type_word.span());
      }
      f.kind = n == 0 ? Kind::DynamicString : Kind::StaticString;
      f.size = n == 0 ? kLocSize : static_cast<uint32_t>(n);
      f.array_len = static_cast<uint32_t>(n);
    } else if (is_stack_type(f.type)) {
      f.kind = Kind::Stack;
      f.size = kLocSize;
    } else {
      return fail(ErrorCode::SynthInvalidType, type_word.span());
    }
    const bool dynamic = f.kind == Kind::DynamicString || f.kind == Kind::Stack;
    f.is_signed = is_signed_type(dynamic ? "__data_loc " + f.type : f.type);
    return f;
  }

  const std::string& command_;
};

std::string_view printf_format(const SynthField& f) {
  if (const IntegerType* t = find_integer_type(f.type)) return t->printf;
  if (f.kind == Kind::StaticString || f.kind == Kind::DynamicString) return "%.*s";
  if (f.kind == Kind::Stack) return "%s";
  return "%llu";
}

bool is_char_type(std::string_view t) { return t == "char" || t == "signed char" || t == "unsigned char"; }

std::string field_line(const catalog::Field& f, std::string_view declaration) {
  return "\tfield:" + std::string(declaration) + ";\toffset:" + std::to_string(f.offset) +
         ";\tsize:" + std::to_string(f.size) + ";\tsigned:" + (f.is_signed ? "1" : "0") + ";\n";
}

}  // namespace

uint32_t SynthDefinition::fixed_size() const {
  uint32_t size = kHeaderSize;
  for (const SynthField& f : fields) size += f.kind == Kind::StaticString ? kStaticStringSlot : kSlot;
  return size;
}

Result<SynthCommand, Diagnostic> parse_synth_command(std::string_view line) {
  SynthCommand cmd;
  if (line.size() >= kMaxCommandBytes) {
    cmd.command = std::string(line.substr(0, kMaxCommandBytes));
    return unexpected(Diagnostic{ErrorCode::CommandTooLong, Span{4095, 4096}, cmd.command, {}});
  }
  // trace_parse_run_command() cuts every line at its first '#'.
  line = line.substr(0, line.find('#'));
  const std::string_view text = trim(line);
  cmd.command = std::string(text);
  SynthParser parser(cmd.command);
  if (text.empty()) return parser.fail(ErrorCode::EmptyCommand, Span{0, 0});

  const size_t name_end = text.find_first_of(" \t");
  const std::string_view name = text.substr(0, name_end);
  const Token rest = [&] {
    if (name_end == std::string_view::npos) return Token{{}, text.size()};
    size_t start = name_end;
    while (start < text.size() && is_space(text[start])) ++start;
    return Token{text.substr(start), start};
  }();

  if (text.front() == '!') {
    // The kernel deletes by name alone and never looks at the fields, so
    // neither a bad name nor bad fields are an error here: the caller finds
    // no such event (an empty name for "!" or "! name"). Fields that parse
    // are kept for the caller; others are dropped.
    cmd.remove = true;
    cmd.definition.name = std::string(name.substr(1));
    if (!rest.text.empty()) {
      auto fields = parser.fields(rest);
      if (fields) cmd.definition.fields = std::move(*fields);
    }
    return cmd;
  }

  // check_command(): name, type and field before the first ';'.
  if (split_words(Token{text.substr(0, text.find(';')), 0}).size() < 3 || name_end == std::string_view::npos)
    return parser.fail(ErrorCode::SynthInvalidCmd, parser.whole());
  if (!is_good_name(name)) return parser.fail(ErrorCode::SynthBadName, Span{0, static_cast<uint32_t>(name.size())});
  cmd.definition.name = std::string(name);
  auto fields = parser.fields(rest);
  if (!fields) return unexpected(std::move(fields).error());
  cmd.definition.fields = std::move(*fields);
  return cmd;
}

std::string list_line(const SynthDefinition& def) {
  std::string out = def.name + "\t";
  for (size_t i = 0; i < def.fields.size(); ++i) {
    if (i > 0) out += "; ";
    out += def.fields[i].type + " " + def.fields[i].name;
  }
  return out;
}

namespace {

// A field of the definition as the kernel's f_show() prints it in the
// format file (its declaration), and as histd's format parser reads it back
// (the unit tests check that both agree).
std::pair<catalog::Field, std::string> format_field(const SynthField& s) {
  catalog::Field f;
  f.name = s.name;
  f.offset = s.offset;
  f.size = s.size;
  f.is_signed = s.is_signed;
  std::string declaration;
  switch (s.kind) {
    case Kind::Integer:
      f.type = s.type;
      f.kind = catalog::FieldKind::Integer;
      declaration = s.type + " " + s.name;
      break;
    case Kind::StaticString: {
      // "char name[N]", as kernels before 6.2 print it. Newer ones print
      // "char name[]" for synthetic events (they define the field without
      // a length), which reads as a flexible array; the length is kept
      // here so that readers of the file bound the string correctly.
      const std::string base = s.type.substr(0, s.type.find('['));
      const std::string len = "[" + std::to_string(s.array_len) + "]";
      f.type = base + len;
      f.kind = is_char_type(base) ? catalog::FieldKind::CharArray : catalog::FieldKind::Array;
      f.array_len = s.array_len;
      declaration = base + " " + s.name + len;
      break;
    }
    case Kind::DynamicString:
    case Kind::Stack: {
      // The kernel prints size:8 here (its slot); histd prints the size
      // of the __data_loc word, which is what its format parser requires.
      f.type = "__data_loc " + s.type;
      const bool char_string =
          s.kind == Kind::DynamicString && s.type.ends_with("[]") && is_char_type(s.type.substr(0, s.type.size() - 2));
      f.kind = char_string ? catalog::FieldKind::DynamicString : catalog::FieldKind::Other;
      declaration = f.type + " " + s.name;
      break;
    }
  }
  return {std::move(f), std::move(declaration)};
}

}  // namespace

catalog::EventFormat format_of(const SynthDefinition& def, uint32_t id) {
  catalog::EventFormat fmt;
  fmt.system = catalog::kSynthSystem;
  fmt.source = catalog::EventSource::Synthetic;
  fmt.name = def.name;
  fmt.id = id;
  fmt.text = "name: " + def.name + "\nID: " + std::to_string(id) + "\nformat:\n";

  struct Common {
    const char* type;
    const char* name;
    uint32_t offset, size;
    bool is_signed;
  };
  for (const Common& c :
       {Common{"unsigned short", "common_type", 0, 2, false}, Common{"unsigned char", "common_flags", 2, 1, false},
        Common{"unsigned char", "common_preempt_count", 3, 1, false}, Common{"int", "common_pid", 4, 4, true}}) {
    catalog::Field f;
    f.name = c.name;
    f.type = c.type;
    f.offset = c.offset;
    f.size = c.size;
    f.is_signed = c.is_signed;
    f.is_common = true;
    fmt.text += field_line(f, f.type + " " + f.name);
    fmt.fields.push_back(std::move(f));
  }
  fmt.text += "\n";

  for (const SynthField& s : def.fields) {
    auto [f, declaration] = format_field(s);
    fmt.text += field_line(f, declaration);
    fmt.fields.push_back(std::move(f));
  }

  // __set_synth_event_print_fmt().
  std::string print = "\"";
  for (size_t i = 0; i < def.fields.size(); ++i) {
    if (i > 0) print += ", ";
    print += def.fields[i].name + "=" + std::string(printf_format(def.fields[i]));
  }
  print += "\"";
  for (const SynthField& f : def.fields) {
    if (f.kind == Kind::DynamicString) {
      print += ", __get_str(" + f.name + ")";
    } else if (f.kind == Kind::Stack) {
      print += ", __get_stacktrace(" + f.name + ")";
    } else {
      print += ", REC->" + f.name;
    }
  }
  fmt.print_fmt = print;
  fmt.text += "\nprint fmt: " + print + "\n";
  catalog::mark_kernel_addresses(fmt);
  return fmt;
}

}  // namespace histd::synth
