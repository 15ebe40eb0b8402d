// SPDX-License-Identifier: GPL-2.0-only
// histd's eprobes (lib/probe): a dynamic_events line read as the kernel
// reads it (the kernel's error texts at its caret positions), the line
// dynamic_events lists, the format file histd gives the event (the
// kernel's layout: traceprobe_define_arg_fields(), checked against a real
// probe event's format on this kernel), and the record its program
// computes from the attached event's (pipeline::probe_entry).
#include <gtest/gtest.h>

#include "fixtures.h"
#include "histd/codegen.h"
#include "histd/pipeline.h"
#include "histd/probe.h"

namespace histd {
namespace {

using probe::parse_probe_command;

probe::Define define(std::string_view line) {
  auto c = parse_probe_command(line);
  EXPECT_TRUE(c.ok()) << line << ": " << (c.ok() ? "" : c.error().message());
  if (!c.ok()) return {};
  EXPECT_TRUE(std::holds_alternative<probe::Define>(c->what)) << line;
  return std::get<probe::Define>(c->what);
}

// The error, and the logged command with a caret under where it points.
std::string refusal(std::string_view line) {
  auto c = parse_probe_command(line);
  if (c.ok()) return "accepted";
  const Diagnostic& d = c.error();
  return std::string(error_text(d.code)) + "\n" + d.command + "\n" + std::string(d.span.begin, ' ') + "^";
}

TEST(ProbeCommand, AnEprobeAsTheKernelNamesIt) {
  probe::Define d = define("e syscalls.sys_enter_openat $filename:x64");
  EXPECT_TRUE(d.def.eprobe);
  EXPECT_EQ(d.def.group, "eprobes");
  EXPECT_EQ(d.def.event, "sys_enter_openat");
  EXPECT_EQ(d.def.attached_system, "syscalls");
  EXPECT_EQ(d.def.attached_event, "sys_enter_openat");
  ASSERT_EQ(d.def.args.size(), 1u);
  EXPECT_EQ(d.def.args[0].name, "arg1");
  EXPECT_EQ(d.def.args[0].fetch.base, catalog::ProbeFetch::Base::EventField);
  EXPECT_EQ(d.def.args[0].fetch.symbol, "filename");
  EXPECT_EQ(probe::list_line(d), "e:eprobes/sys_enter_openat syscalls.sys_enter_openat arg1=$filename:x64");

  d = define("e:my/open syscalls/sys_enter_openat file=+0($filename):ustring  c=$comm   # the name");
  EXPECT_EQ(d.def.group, "my");
  EXPECT_EQ(d.def.event, "open");
  EXPECT_EQ(probe::arg_type(d.def.args[0]), "ustring");
  EXPECT_EQ(probe::arg_type(d.def.args[1]), "string");
  EXPECT_EQ(d.arg_at, (std::vector<uint32_t>{41, 65}));
  EXPECT_EQ(probe::list_line(d), "e:my/open syscalls.sys_enter_openat file=+0($filename):ustring c=$comm");
  EXPECT_EQ(probe::trace_prefix(d.def), "(syscalls.sys_enter_openat)");

  // A filter on the attached event: its text and where it starts; kept
  // when the definition is saved, not listed (the kernel's listing).
  d = define("e:f/o kmem.kmalloc n=$bytes_req  if bytes_req > 100 && gfp_flags & 1");
  EXPECT_EQ(d.filter, "bytes_req > 100 && gfp_flags & 1");
  EXPECT_EQ(d.filter_at, 35u);
  EXPECT_EQ(probe::list_line(d), "e:f/o kmem.kmalloc n=$bytes_req");
  EXPECT_EQ(probe::defining_line(d), "e:f/o kmem.kmalloc n=$bytes_req if bytes_req > 100 && gfp_flags & 1");
  EXPECT_EQ(define(probe::defining_line(d)), d);

  d = define("e:grp/ sched.sched_switch");
  EXPECT_EQ(d.def.event, "sched_switch");
  EXPECT_EQ(d.def.group, "grp");
}

TEST(ProbeCommand, RemovesByNameWithOrWithoutGroup) {
  auto c = parse_probe_command("-:myprobe");
  ASSERT_TRUE(c.ok());
  auto r = std::get<probe::Remove>(c->what);
  EXPECT_EQ(r.group, "");
  EXPECT_EQ(r.event, "myprobe");
  c = parse_probe_command("  -:grp/myprobe ");
  ASSERT_TRUE(c.ok());
  r = std::get<probe::Remove>(c->what);
  EXPECT_EQ(r.group, "grp");
  EXPECT_EQ(r.event, "myprobe");
  EXPECT_EQ(refusal("-:"), "Event name is not specified\n-:\n^");
}

TEST(ProbeCommand, RefusalsAtTheKernelsPositions) {
  EXPECT_EQ(refusal("e:/ev sched.sched_switch"), "Group name is not specified\ne:/ev sched.sched_switch\n  ^");
  EXPECT_EQ(refusal("e:g-x/ev sched.sched_switch"),
            "Group name must follow the same rules as C identifiers\ne:g-x/ev sched.sched_switch\n  ^");
  EXPECT_EQ(refusal("e:g/1ev sched.sched_switch"),
            "Event name must follow the same rules as C identifiers\ne:g/1ev sched.sched_switch\n    ^");
  EXPECT_EQ(refusal("e: sched.sched_switch"), "Event name is not specified\ne: sched.sched_switch\n  ^");
  EXPECT_EQ(refusal("e:g/" + std::string(64, 'e') + " a.b").substr(0, 22), "Event name is too long");
  EXPECT_EQ(refusal("e:g/ev"), "This requires both group and event name to attach\ne:g/ev\n      ^");
  EXPECT_EQ(refusal("e:g/ev sched_switch"),
            "This requires both group and event name to attach\ne:g/ev sched_switch\n       ^");
  EXPECT_EQ(refusal("e a.b x=$f y=$g x=$h"),
            "This argument name is already used\ne a.b x=$f y=$g x=$h\n                ^");
  EXPECT_EQ(refusal("e a.b 9x=$f"), "Argument name must follow the same rules as C identifiers\ne a.b 9x=$f\n      ^");
  EXPECT_EQ(refusal("e a.b =$f"), "Argument name is not specified\ne a.b =$f\n      ^");
  EXPECT_EQ(refusal("e a.b x="), "No argument expression\ne a.b x=\n        ^");
  EXPECT_EQ(refusal("e a.b x=$f:u128"), "Unknown type is specified\ne a.b x=$f:u128\n           ^");
  EXPECT_EQ(refusal("e a.b x=%di"), "Invalid fetch argument\ne a.b x=%di\n        ^");
  EXPECT_EQ(refusal("e a.b x=$retval"), "Invalid fetch argument\ne a.b x=$retval\n        ^");
  EXPECT_EQ(refusal("e a.b x=\\5:string"), "String accepts only memory argument\ne a.b x=\\5:string\n        ^");
  EXPECT_EQ(refusal("e a.b x=$comm:u32"),
            "$comm and immediate-string only accepts string type\ne a.b x=$comm:u32\n        ^");
  EXPECT_EQ(refusal("e a.b x=$f if"), "No filter rule after 'if'\ne a.b x=$f if\n             ^");
  EXPECT_EQ(refusal("p:k/x vfs_read").substr(0, 23), "unknown trigger command");
  EXPECT_EQ(refusal("  # only a comment"), "empty command\n\n^");
}

// The event format histd gives an eprobe: the kernel's layout (as this
// kernel gives the same types on a uprobe event, after its __probe_ip) and
// its PROBE_PRINT_EVENT print fmt.
TEST(ProbeFormat, TheKernelsLayoutAndPrintFmt) {
  probe::Define d = define("e:eprobes/a a.b x=$f:u32 y=$g s=+0($h):string c=$i:s8 sym=$j:x16");
  catalog::EventFormat f = probe::format_of(d.def, 2326);
  EXPECT_EQ(
      f.text,
      "name: a\nID: 2326\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:u32 x;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:u64 y;\toffset:12;\tsize:8;\tsigned:0;\n"
      "\tfield:__data_loc char[] s;\toffset:20;\tsize:4;\tsigned:1;\n"
      "\tfield:s8 c;\toffset:24;\tsize:1;\tsigned:1;\n"
      "\tfield:u16 sym;\toffset:25;\tsize:2;\tsigned:0;\n\n"
      "print fmt: \" x=%u y=0x%Lx s=\\\"%s\\\" c=%d sym=0x%x\", REC->x, REC->y, __get_str(s), REC->c, REC->sym\n");
  EXPECT_EQ(f.system, "eprobes");
  EXPECT_EQ(f.name, "a");
  EXPECT_EQ(f.id, 2326u);
  EXPECT_EQ(f.source, catalog::EventSource::Probe);
  ASSERT_TRUE(f.probe.has_value());
  EXPECT_TRUE(f.probe->eprobe);
  ASSERT_NE(f.find("s"), nullptr);
  EXPECT_EQ(f.find("s")->kind, catalog::FieldKind::DynamicString);
}

// What its tracepoint program computes: each field of the attached
// event's record where that event's format puts it.
TEST(ProbeFormat, ItsRecordIsComputedFromTheAttachedEvents) {
  auto attached = testing::fixtures().event("kmem", "kmalloc");
  ASSERT_TRUE(attached.ok());
  probe::Define d = define("e:eprobes/k kmem.kmalloc n=$bytes_req:u32 site=$call_site p=+8($ptr):s64 who=$comm");
  auto entry = pipeline::probe_entry(probe::format_of(d.def, 9), attached->get());
  ASSERT_TRUE(entry.ok()) << entry.error().context;
  EXPECT_TRUE(entry->eprobe);
  ASSERT_EQ(entry->values.size(), 4u);
  const catalog::Field* bytes_req = (*attached)->find("bytes_req");
  EXPECT_EQ(entry->values[0].base, codegen::ProbeValue::Base::Field);
  EXPECT_EQ(entry->values[0].reg_offset, bytes_req->offset);
  EXPECT_EQ(entry->values[0].record_size, bytes_req->size);
  EXPECT_EQ(entry->values[0].field_offset, 8u);
  EXPECT_EQ(entry->values[0].field_size, 4u);
  ASSERT_EQ(entry->values[2].derefs.size(), 1u);
  EXPECT_EQ(entry->values[2].derefs[0].offset, 8);
  EXPECT_TRUE(entry->values[3].string);
  // Without the attached event's format there is nothing to compute from.
  EXPECT_FALSE(pipeline::probe_entry(probe::format_of(d.def, 9)).ok());
}

}  // namespace
}  // namespace histd
