// SPDX-License-Identifier: GPL-2.0-only
// synth::format_of: the tracefs format file histd gives a synthetic event,
// as the kernel writes it, and that it parses back to the definition.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "histd/catalog.h"
#include "histd/synth.h"
#include "synth_support.h"

namespace histd::synth {
namespace {

using Kind = SynthField::Kind;

TEST(SynthFormat, SeedEventGolden) {
  const catalog::EventFormat f = format_of(define("wakeup_latency u64 lat; pid_t pid; int prio"), 1234);
  EXPECT_EQ(f.text,
            "name: wakeup_latency\n"
            "ID: 1234\n"
            "format:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
            "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
            "\n"
            "\tfield:u64 lat;\toffset:8;\tsize:8;\tsigned:0;\n"
            "\tfield:pid_t pid;\toffset:16;\tsize:4;\tsigned:1;\n"
            "\tfield:int prio;\toffset:24;\tsize:4;\tsigned:1;\n"
            "\n"
            "print fmt: \"lat=%llu, pid=%d, prio=%d\", REC->lat, REC->pid, REC->prio\n");
  EXPECT_EQ(f.system, "synthetic");
  EXPECT_EQ(f.name, "wakeup_latency");
  EXPECT_EQ(f.id, 1234u);
  EXPECT_EQ(f.print_fmt, "\"lat=%llu, pid=%d, prio=%d\", REC->lat, REC->pid, REC->prio");
  ASSERT_EQ(f.fields.size(), 7u);
  EXPECT_TRUE(f.fields[3].is_common);
  EXPECT_FALSE(f.fields[4].is_common);
  EXPECT_EQ(f.record_size(), 28u);
}

TEST(SynthFormat, StringsStacksAndFlagsGolden) {
  const catalog::EventFormat f =
      format_of(define("mixed char comm[16]; char[] path; unsigned long[] stack; gfp_t flags; unsigned int n"), 77);
  EXPECT_EQ(f.text,
            "name: mixed\n"
            "ID: 77\n"
            "format:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
            "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
            "\n"
            "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:1;\n"
            "\tfield:__data_loc char[] path;\toffset:264;\tsize:4;\tsigned:1;\n"
            "\tfield:__data_loc unsigned long[] stack;\toffset:272;\tsize:4;\tsigned:1;\n"
            "\tfield:gfp_t flags;\toffset:280;\tsize:4;\tsigned:0;\n"
            "\tfield:unsigned int n;\toffset:288;\tsize:4;\tsigned:0;\n"
            "\n"
            "print fmt: \"comm=%.*s, path=%.*s, stack=%s, flags=%x, n=%u\", REC->comm, __get_str(path), "
            "__get_stacktrace(stack), REC->flags, REC->n\n");
  const catalog::Field* comm = f.find("comm");
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->kind, catalog::FieldKind::CharArray);
  EXPECT_EQ(comm->array_len, 16u);
  EXPECT_EQ(comm->type, "char[16]");
  EXPECT_EQ(f.find("path")->kind, catalog::FieldKind::DynamicString);
  EXPECT_EQ(f.find("path")->type, "__data_loc char[]");
  EXPECT_EQ(f.find("stack")->kind, catalog::FieldKind::Other);
}

TEST(SynthFormat, EveryPrintfFormat) {
  struct Case {
    const char* decl;
    const char* fmt;
  };
  for (const Case& c : std::vector<Case>{{"s64 x", "%lld"},    {"u64 x", "%llu"},
                                         {"s32 x", "%d"},      {"u32 x", "%u"},
                                         {"s16 x", "%d"},      {"u16 x", "%u"},
                                         {"s8 x", "%d"},       {"u8 x", "%u"},
                                         {"char x", "%d"},     {"unsigned char x", "%u"},
                                         {"int x", "%d"},      {"unsigned int x", "%u"},
                                         {"long x", "%ld"},    {"unsigned long x", "%lu"},
                                         {"bool x", "%d"},     {"pid_t x", "%d"},
                                         {"gfp_t x", "%x"},    {"char x[8]", "%.*s"},
                                         {"char x[]", "%.*s"}, {"long x[]", "%s"}}) {
    SynthDefinition d;
    d.name = "e";
    d.fields = {field_of(c.decl)};
    const std::string arg = d.fields[0].kind == Kind::DynamicString ? "__get_str(x)"
                            : d.fields[0].kind == Kind::Stack       ? "__get_stacktrace(x)"
                                                                    : "REC->x";
    EXPECT_EQ(format_of(d, 1).print_fmt, "\"x=" + std::string(c.fmt) + "\", " + arg) << c.decl;
  }
}

TEST(SynthFormat, ParsesBackThroughTheFormatParser) {
  for (const char* line :
       {"wakeup_latency u64 lat; pid_t pid; int prio", "e char c[16]; char[] d; unsigned long[] s; long t[]",
        "e unsigned char a; unsigned int b; unsigned long c; bool d; gfp_t e; s8 f; s16 g; s32 h; s64 i; u16 j",
        "e char s[+16]; char t[0]; long u[3]; char[256] v; unsigned char w[4]; unsigned char x[]; xchar[2] y",
        "e u64 common_foo; char last[1]"}) {
    const catalog::EventFormat f = format_of(define(line), 4321);
    auto parsed = catalog::parse_format(f.text, "synthetic");
    ASSERT_TRUE(parsed.ok()) << line << ": " << parsed.error().context;
    EXPECT_EQ(parsed->fields, f.fields) << line;
    EXPECT_EQ(parsed->name, f.name) << line;
    EXPECT_EQ(parsed->id, f.id) << line;
    EXPECT_EQ(parsed->print_fmt, f.print_fmt) << line;
    EXPECT_EQ(parsed->text, f.text) << line;
    EXPECT_EQ(parsed->system, "synthetic") << line;
  }
  const catalog::EventFormat many = format_of(define(many_fields(kMaxFields)), 1);
  auto parsed = catalog::parse_format(many.text, "synthetic");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->fields.size(), 4u + 64u);
  EXPECT_EQ(parsed->record_size(), define(many_fields(kMaxFields)).fixed_size());
}

TEST(SynthFormat, FieldsMatchTheDefinition) {
  const SynthDefinition d = define("e char a[10]; u16 b; char[] c; long[] s");
  const catalog::EventFormat f = format_of(d, 9);
  ASSERT_EQ(f.fields.size(), 4u + d.fields.size());
  for (size_t i = 0; i < d.fields.size(); ++i) {
    const catalog::Field& cf = f.fields[4 + i];
    EXPECT_EQ(cf.name, d.fields[i].name);
    EXPECT_EQ(cf.offset, d.fields[i].offset);
    EXPECT_EQ(cf.size, d.fields[i].size);
    EXPECT_EQ(cf.is_signed, d.fields[i].is_signed);
    EXPECT_FALSE(cf.is_common);
  }
  EXPECT_EQ(f.find("b")->offset, 8u + 256u);
  EXPECT_EQ(f.find("b")->kind, catalog::FieldKind::Integer);
}

}  // namespace
}  // namespace histd::synth
