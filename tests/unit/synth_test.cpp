// SPDX-License-Identifier: GPL-2.0-only
// Synthetic event definitions: the parser against the kernel's rules
// (trace_events_synth.c and the ftrace selftests), the synthetic_events
// listing (the format file histd serves for each: synth_format_test). Error
// goldens use the selftests' inline-caret notation: '^' marks the byte the
// caret must point at and is removed before parsing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "histd/synth.h"
#include "synth_support.h"

namespace histd::synth {
namespace {

using Kind = SynthField::Kind;

void expect_error(const std::string& marked, ErrorCode code) {
  const size_t caret = marked.find('^');
  ASSERT_NE(caret, std::string::npos) << marked;
  std::string text = marked;
  text.erase(caret, 1);
  auto r = parse_synth_command(text);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(error_name(r.error().code), error_name(code)) << text;
  EXPECT_EQ(r.error().span.begin, caret) << text;
  EXPECT_LE(r.error().span.begin, r.error().span.end) << text;
  EXPECT_LE(r.error().span.end, r.error().command.size()) << text;
  EXPECT_EQ(r.error().command, text) << text;
}

TEST(SynthParse, SeedDefinitions) {
  auto r = parse_synth_command("wakeup_latency u64 lat; pid_t pid; int prio");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->remove);
  EXPECT_EQ(r->command, "wakeup_latency u64 lat; pid_t pid; int prio");
  const SynthDefinition& d = r->definition;
  EXPECT_EQ(d.name, "wakeup_latency");
  ASSERT_EQ(d.fields.size(), 3u);
  const std::vector<SynthField> want = {
      {"u64", "lat", Kind::Integer, 8, false, 0, 8},
      {"pid_t", "pid", Kind::Integer, 4, true, 0, 16},
      {"int", "prio", Kind::Integer, 4, true, 0, 24},
  };
  EXPECT_EQ(d.fields, want);
  EXPECT_EQ(d.fixed_size(), 32u);

  EXPECT_EQ(define("wakeup_new_test pid_t pid").fields.size(), 1u);
  EXPECT_EQ(define("latency u64 lat").fields[0].name, "lat");
}

TEST(SynthParse, EveryIntegerType) {
  struct Case {
    const char* type;
    uint32_t size;
    bool is_signed;
  };
  for (const Case& c : std::vector<Case>{{"u64", 8, false},
                                         {"s64", 8, true},
                                         {"u32", 4, false},
                                         {"s32", 4, true},
                                         {"u16", 2, false},
                                         {"s16", 2, true},
                                         {"u8", 1, false},
                                         {"s8", 1, true},
                                         {"char", 1, true},
                                         {"unsigned char", 1, false},
                                         {"int", 4, true},
                                         {"unsigned int", 4, false},
                                         {"long", 8, true},
                                         {"unsigned long", 8, false},
                                         {"bool", 1, true},
                                         {"pid_t", 4, true},
                                         {"gfp_t", 4, false}}) {
    const SynthField f = field_of(std::string(c.type) + " x");
    EXPECT_EQ(f.type, c.type);
    EXPECT_EQ(f.name, "x") << c.type;
    EXPECT_EQ(f.kind, Kind::Integer) << c.type;
    EXPECT_EQ(f.size, c.size) << c.type;
    EXPECT_EQ(f.is_signed, c.is_signed) << c.type;
    EXPECT_EQ(f.array_len, 0u) << c.type;
    EXPECT_EQ(f.offset, 8u) << c.type;
  }
}

TEST(SynthParse, UnsignedIsTwoWordsWithAnyBlanks) {
  EXPECT_EQ(field_of("unsigned \t int x").type, "unsigned int");
  EXPECT_EQ(field_of("unsigned  long x").type, "unsigned long");
}

TEST(SynthParse, StaticStrings) {
  // The length may follow the name (the usual form) or the type word.
  for (const char* decl : {"char comm[16]", "char[16] comm"}) {
    const SynthField f = field_of(decl);
    EXPECT_EQ(f.type, "char[16]") << decl;
    EXPECT_EQ(f.name, "comm") << decl;
    EXPECT_EQ(f.kind, Kind::StaticString) << decl;
    EXPECT_EQ(f.size, 16u) << decl;
    EXPECT_EQ(f.array_len, 16u) << decl;
    EXPECT_TRUE(f.is_signed) << decl;
  }
  EXPECT_EQ(field_of("char s[256]").size, 256u);
  EXPECT_EQ(field_of("char s[1]").size, 1u);
  // Whatever N is, the string takes STR_VAR_LEN_MAX bytes of the record.
  SynthDefinition d = define("e char a[8]; u64 b; char c[256]; u8 d");
  ASSERT_EQ(d.fields.size(), 4u);
  EXPECT_EQ(d.fields[0].offset, 8u);
  EXPECT_EQ(d.fields[1].offset, 8u + 256u);
  EXPECT_EQ(d.fields[2].offset, 8u + 256u + 8u);
  EXPECT_EQ(d.fields[3].offset, 8u + 256u + 8u + 256u);
  EXPECT_EQ(d.fixed_size(), 8u + 256u + 8u + 256u + 8u);
}

TEST(SynthParse, DynamicStringsAndStacks) {
  for (const char* decl : {"char path[]", "char[] path"}) {
    const SynthField f = field_of(decl);
    EXPECT_EQ(f.type, "char[]") << decl;
    EXPECT_EQ(f.kind, Kind::DynamicString) << decl;
    EXPECT_EQ(f.size, 4u) << decl;
    EXPECT_EQ(f.array_len, 0u) << decl;
    EXPECT_TRUE(f.is_signed) << decl;
  }
  for (const char* decl : {"long[] st", "long st[]", "unsigned long[] st", "unsigned long st[]"}) {
    const SynthField f = field_of(decl);
    EXPECT_EQ(f.kind, Kind::Stack) << decl;
    EXPECT_EQ(f.size, 4u) << decl;
    // The kernel computes signedness on "__data_loc unsigned long[]".
    EXPECT_TRUE(f.is_signed) << decl;
  }
  EXPECT_EQ(field_of("unsigned long st[]").type, "unsigned long[]");
  EXPECT_EQ(field_of("long[] st").type, "long[]");
  // A dynamic field takes one 8-byte slot; its data follows the fixed part.
  SynthDefinition d = define("e char[] a; unsigned long[] b; u32 c");
  EXPECT_EQ(d.fields[1].offset, 16u);
  EXPECT_EQ(d.fields[2].offset, 24u);
  EXPECT_EQ(d.fixed_size(), 32u);
}

TEST(SynthParse, KernelQuirksAreKept) {
  // All as synth_field_size() decides, by substring and kstrtouint(.., 0).
  SynthField f = field_of("char s[0]");
  EXPECT_EQ(f.kind, Kind::DynamicString);
  EXPECT_EQ(f.type, "char[0]");
  f = field_of("char s[+16]");
  EXPECT_EQ(f.kind, Kind::StaticString);
  EXPECT_EQ(f.size, 16u);
  EXPECT_EQ(f.type, "char[+16]");
  EXPECT_EQ(field_of("char s[010]").size, 8u);
  EXPECT_EQ(field_of("char s[0x8]").size, 8u);
  f = field_of("unsigned char s[4]");
  EXPECT_EQ(f.kind, Kind::StaticString);
  EXPECT_EQ(f.type, "unsigned char[4]");
  EXPECT_FALSE(f.is_signed);
  EXPECT_EQ(field_of("unsigned char s[]").kind, Kind::DynamicString);
  f = field_of("long s[3]");
  EXPECT_EQ(f.kind, Kind::Stack);
  EXPECT_EQ(f.type, "long[3]");
  EXPECT_EQ(field_of("xchar[4] s").kind, Kind::StaticString);
}

TEST(SynthParse, SeparatorsAndLegacyForm) {
  const std::vector<std::string> two = {"var1", "var2"};
  for (const char* line : {"myevent u64 var1; u64 var2;", "myevent u64 var1 ; u64 var2 ;", "myevent u64 var1 ;u64 var2",
                           "myevent u64 var1;;u64 var2", "myevent u64 var1 u64 var2", "myevent\tu64\tvar1;\tu64 var2",
                           "  myevent u64 var1; u64 var2  \n"}) {
    SynthDefinition d = define(line);
    EXPECT_EQ(d.name, "myevent") << line;
    ASSERT_EQ(d.fields.size(), 2u) << line;
    EXPECT_EQ(d.fields[0].name, "var1") << line;
    EXPECT_EQ(d.fields[1].name, "var2") << line;
    EXPECT_EQ(d.fields[1].offset, 16u) << line;
  }
  // Legacy and ';' forms mix; "unsigned" takes three words in either.
  SynthDefinition d = define("e u64 a unsigned int b; char c[8] s8 d; unsigned long[] e");
  ASSERT_EQ(d.fields.size(), 5u);
  EXPECT_EQ(d.fields[1].type, "unsigned int");
  EXPECT_EQ(d.fields[2].type, "char[8]");
  EXPECT_EQ(d.fields[3].name, "d");
  EXPECT_EQ(d.fields[4].kind, Kind::Stack);
}

TEST(SynthParse, CommentsAndTheLoggedCommand) {
  auto r = parse_synth_command("  myevent u64 a   # the latency\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->command, "myevent u64 a");
  EXPECT_EQ(define("myevent u64 a;# u64 b").fields.size(), 1u);
  auto e = parse_synth_command("  myevent chr a # c");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().command, "myevent chr a");
  EXPECT_EQ(e.error().span, (Span{8, 11}));
}

TEST(SynthParse, BlankLinesAreEmptyCommands) {
  for (const char* line : {"", " ", " \t ", "\n", "# comment", "   # comment\n"}) {
    auto r = parse_synth_command(line);
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_EQ(r.error().code, ErrorCode::EmptyCommand) << line;
    EXPECT_EQ(r.error().command, "") << line;
    EXPECT_EQ(r.error().span, (Span{0, 0})) << line;
  }
}

TEST(SynthParse, Removal) {
  auto r = parse_synth_command("!wakeup_latency u64 lat pid_t pid int prio");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->remove);
  EXPECT_EQ(r->command, "!wakeup_latency u64 lat pid_t pid int prio");
  EXPECT_EQ(r->definition.name, "wakeup_latency");
  ASSERT_EQ(r->definition.fields.size(), 3u);
  EXPECT_EQ(r->definition.fields[2].offset, 24u);

  r = parse_synth_command(" !myevent\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->remove);
  EXPECT_EQ(r->command, "!myevent");
  EXPECT_EQ(r->definition.name, "myevent");
  EXPECT_TRUE(r->definition.fields.empty());

  // The kernel deletes by name alone: nothing after it is checked, and a
  // name that cannot exist is simply not found by the caller.
  r = parse_synth_command("!my-event chr x;;[");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->definition.name, "my-event");
  EXPECT_TRUE(r->definition.fields.empty());
  for (const char* line : {"!", "! myevent"}) {
    r = parse_synth_command(line);
    ASSERT_TRUE(r.ok()) << line;
    EXPECT_TRUE(r->remove) << line;
    EXPECT_EQ(r->definition.name, "") << line;
  }
}

TEST(SynthParse, FieldLimit) {
  SynthDefinition d = define(many_fields(kMaxFields));
  ASSERT_EQ(d.fields.size(), 64u);
  EXPECT_EQ(d.fields.back().offset, 8u + 63u * 8u);
  expect_error("^" + many_fields(kMaxFields + 1), ErrorCode::SynthTooManyFields);
  // The 65th field is parsed before it is counted: its own error wins.
  expect_error(many_fields(kMaxFields) + "; ^chr x", ErrorCode::SynthInvalidType);
}

TEST(SynthParse, KernelSelftestErrors) {
  // trigger-synthetic_event_syntax_errors.tc, caret for caret.
  expect_error("myevent ^chr arg", ErrorCode::SynthInvalidType);
  expect_error("myevent ^unsigned arg", ErrorCode::SynthIncompleteType);
  expect_error("myevent char ^str]; int v", ErrorCode::SynthBadName);
  expect_error("^mye-vent char str[]", ErrorCode::SynthBadName);
  expect_error("myevent char ^st-r[]", ErrorCode::SynthBadName);
  expect_error("myevent char str;^[]", ErrorCode::SynthInvalidField);
  expect_error("myevent char str; ^int", ErrorCode::SynthInvalidField);
  expect_error("myevent char ^str[; int v", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^str[kdjdk]", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^str[257]", ErrorCode::SynthInvalidArraySpec);
  expect_error("^mye;vent char str[]", ErrorCode::SynthInvalidCmd);
  expect_error("^myevent ; char str[]", ErrorCode::SynthInvalidCmd);
  expect_error("^myevent; char str[]", ErrorCode::SynthInvalidCmd);
  expect_error("^myevent ;char str[]", ErrorCode::SynthInvalidCmd);
  expect_error("^; char str[]", ErrorCode::SynthInvalidCmd);
  expect_error("^;myevent char str[]", ErrorCode::SynthInvalidCmd);
  expect_error("^myevent", ErrorCode::SynthInvalidCmd);
}

TEST(SynthParse, MoreErrors) {
  // INVALID_CMD: fewer than three words before the first ';'.
  expect_error("^myevent u64", ErrorCode::SynthInvalidCmd);
  expect_error("^myevent u64; u64 b", ErrorCode::SynthInvalidCmd);
  expect_error("^myevent\vu64\va", ErrorCode::SynthInvalidCmd);  // the name ends at a blank or tab only
  // INCOMPLETE_TYPE: "unsigned" without two more words in its piece.
  expect_error("myevent u64 a; ^unsigned int", ErrorCode::SynthIncompleteType);
  expect_error("myevent u64 a ^unsigned", ErrorCode::SynthIncompleteType);
  expect_error("myevent ^unsigned int; u64 b", ErrorCode::SynthIncompleteType);
  // INVALID_FIELD: a type without a name (legacy form: an odd word out).
  expect_error("myevent u64 a ^u32", ErrorCode::SynthInvalidField);
  expect_error("myevent u64 a; ^u32 ; u64 c", ErrorCode::SynthInvalidField);
  // INVALID_TYPE: at the type word (after "unsigned", the word after it).
  expect_error("myevent unsigned ^short s", ErrorCode::SynthInvalidType);
  expect_error("myevent unsigned ^u64 s", ErrorCode::SynthInvalidType);
  expect_error("myevent ^u64 s[4]", ErrorCode::SynthInvalidType);
  expect_error("myevent ^u64[] s", ErrorCode::SynthInvalidType);
  expect_error("myevent ^size_t s", ErrorCode::SynthInvalidType);
  expect_error("myevent ^U64 s", ErrorCode::SynthInvalidType);
  expect_error("myevent ^char[257] s", ErrorCode::SynthInvalidType);
  expect_error("myevent ^char[x] s", ErrorCode::SynthInvalidType);
  // INVALID_ARRAY_SPEC: a bad "[...]" after the name, at the name.
  expect_error("myevent char ^s[0x10]", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^s[-1]", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^s[08]", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^s[+]", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^s[16]x", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char ^s[16][2]", ErrorCode::SynthInvalidArraySpec);
  expect_error("myevent char[16] ^s[2]", ErrorCode::SynthInvalidArraySpec);
  // BAD_NAME: names are [A-Za-z_][A-Za-z0-9_]*.
  expect_error("^1ev u64 a", ErrorCode::SynthBadName);
  expect_error("^waking+wakeup_latency u64 a", ErrorCode::SynthBadName);
  expect_error("myevent u64 ^1a", ErrorCode::SynthBadName);
  expect_error("myevent u64 ^a.b", ErrorCode::SynthBadName);
  expect_error("myevent u64 ^[4]", ErrorCode::SynthBadName);
  expect_error("myevent char ^s]", ErrorCode::SynthBadName);
  // Empty pieces between ';' are skipped, the caret still lands on the token.
  expect_error("myevent u64 a;; ;^chr b", ErrorCode::SynthInvalidType);
}

TEST(SynthParse, CaretsComeFromTokensNotTextSearch) {
  // The kernel's errpos() would find the first "chr", at 0.
  expect_error("chr_ev u64 a; ^chr b", ErrorCode::SynthInvalidType);
  expect_error("a u64 a; u64 b; ^u64 ; u64 c", ErrorCode::SynthInvalidField);
  auto r = parse_synth_command("myevent char str[257]");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().span, (Span{13, 21}));
}

TEST(SynthParse, NamesHistdRefuses) {
  // The kernel takes these and then serves a format file with two fields of
  // one name; histd refuses them at the second name.
  expect_error("myevent u64 a; u64 ^a", ErrorCode::SynthInvalidField);
  expect_error("myevent u64 a u32 ^a", ErrorCode::SynthInvalidField);
  expect_error("myevent char a[4]; char ^a[]", ErrorCode::SynthInvalidField);
  expect_error("myevent char a[4]; char[] ^a[]", ErrorCode::SynthInvalidArraySpec);  // char[][]
  expect_error("myevent int ^common_pid", ErrorCode::SynthInvalidField);
  expect_error("myevent u8 ^common_flags", ErrorCode::SynthInvalidField);
  auto r = parse_synth_command("myevent u64 a; u64 a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "Invalid field: duplicate field name");
  EXPECT_EQ(define("myevent u64 common_foo").fields[0].name, "common_foo");
}

TEST(SynthParse, TooLongIsRefused) {
  auto r = parse_synth_command("e u64 a" + std::string(5000, ' '));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::CommandTooLong);
}

TEST(SynthParse, ErrorLogEntry) {
  auto r = parse_synth_command("myevent chr arg");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(format_error_log_entry("synthetic_events", r.error()),
            "synthetic_events: error: Invalid type\n"
            "  Command: myevent chr arg\n"
            "                   ^\n");
  r = parse_synth_command("myevent");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "Command must be of the form: <name> field[;field] ...");
}

TEST(SynthParse, NeverCrashesOnJunk) {
  const std::string alphabet("!e u64 char[0x] unsigned;#\t\v_-9+", 33);
  uint64_t state = 4242;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const size_t len = state % 48;
    for (size_t j = 0; j < len; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      s += alphabet[(state >> 33) % alphabet.size()];
    }
    auto r = parse_synth_command(s);
    if (!r) {
      EXPECT_LE(r.error().span.end, r.error().command.size()) << s;
      EXPECT_LE(r.error().span.begin, r.error().span.end) << s;
    } else if (!r->remove) {
      EXPECT_FALSE(r->definition.fields.empty()) << s;
      auto again = parse_synth_command(list_line(r->definition));
      ASSERT_TRUE(again.ok()) << s;
      EXPECT_EQ(again->definition, r->definition) << s;
    }
  }
}

TEST(SynthList, PrintsLikeTheKernel) {
  EXPECT_EQ(list_line(define("wakeup_latency u64 lat; pid_t pid; int prio")),
            "wakeup_latency\tu64 lat; pid_t pid; int prio");
  // What the kernel selftests grep for after each definition.
  EXPECT_EQ(list_line(define("myevent u64 var1 ; u64 var2 ;")), "myevent\tu64 var1; u64 var2");
  EXPECT_EQ(list_line(define("myevent unsigned long var")), "myevent\tunsigned long var");
  EXPECT_EQ(list_line(define("myevent char var[10]")), "myevent\tchar[10] var");
  EXPECT_EQ(list_line(define("myevent unsigned long[] var")), "myevent\tunsigned long[] var");
  EXPECT_EQ(list_line(define("myevent char var[]; long st[]")), "myevent\tchar[] var; long[] st");
  EXPECT_EQ(list_line(define("e u64 a u8 b")), "e\tu64 a; u8 b");
}

TEST(SynthList, RoundTrips) {
  for (const char* line :
       {"wakeup_latency u64 lat; pid_t pid; int prio", "e u64 a u8 b", "e char c[16]; char[] d; unsigned long[] s",
        "e unsigned char a; unsigned int b; unsigned long c; bool d; gfp_t e; s8 f; s16 g; s32 h; s64 i",
        "e char s[+16]; char t[0]; long u[3]; char[256] v"}) {
    const SynthDefinition d = define(line);
    const std::string listed = list_line(d);
    EXPECT_EQ(define(listed), d) << line;
    EXPECT_EQ(list_line(define(listed)), listed) << line;
  }
}

}  // namespace
}  // namespace histd::synth
