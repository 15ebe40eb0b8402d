// SPDX-License-Identifier: GPL-2.0-only
// Probe events: their definitions as kprobe_events / uprobe_events list
// them, the computation of their records (pipeline::probe_entry) and the
// kprobe program's entry codegen writes for it.
#include <gtest/gtest.h>

#include "histd/catalog.h"
#include "histd/codegen.h"
#include "histd/pipeline.h"

namespace histd {
namespace {

using catalog::parse_probe_definition;
using catalog::ProbeFetch;

TEST(ProbeDefinition, KprobeWithEveryFetchForm) {
  auto d = parse_probe_definition(
      "p:kprobes/myprobe do_sys_openat2+4 dfd=%di:s32 path=+0(+8(%si)):string a=$arg2 "
      "r=$retval st=$stack2 sp=$stack c=$comm i=\\-5 m=@0xffff0000:u16 u=+u16(%dx):x8");
  ASSERT_TRUE(d.ok()) << d.error().context;
  EXPECT_FALSE(d->is_return);
  EXPECT_FALSE(d->uprobe);
  EXPECT_EQ(d->group, "kprobes");
  EXPECT_EQ(d->event, "myprobe");
  EXPECT_EQ(d->symbol, "do_sys_openat2");
  EXPECT_EQ(d->offset, 4u);
  ASSERT_EQ(d->args.size(), 10u);
  EXPECT_EQ(d->args[0].name, "dfd");
  EXPECT_EQ(d->args[0].fetch.base, ProbeFetch::Base::Register);
  EXPECT_EQ(d->args[0].fetch.reg, "di");
  EXPECT_EQ(d->args[0].fetch.type, "s32");
  // Innermost first: read 8 bytes at si+8, then the string at that plus 0.
  EXPECT_EQ(d->args[1].fetch.derefs, (std::vector<ProbeFetch::Deref>{{8, false}, {0, false}}));
  EXPECT_EQ(d->args[1].fetch.type, "string");
  EXPECT_EQ(d->args[2].fetch.base, ProbeFetch::Base::Argument);
  EXPECT_EQ(d->args[2].fetch.index, 2u);
  EXPECT_EQ(d->args[3].fetch.base, ProbeFetch::Base::ReturnValue);
  EXPECT_EQ(d->args[4].fetch.base, ProbeFetch::Base::StackPointer);
  EXPECT_EQ(d->args[4].fetch.derefs, (std::vector<ProbeFetch::Deref>{{16, false}}));
  EXPECT_TRUE(d->args[5].fetch.derefs.empty());
  EXPECT_EQ(d->args[6].fetch.base, ProbeFetch::Base::Comm);
  EXPECT_EQ(d->args[7].fetch.base, ProbeFetch::Base::Immediate);
  EXPECT_EQ(d->args[7].fetch.immediate, -5);
  EXPECT_EQ(d->args[8].fetch.immediate, 0xffff0000);
  EXPECT_EQ(d->args[8].fetch.derefs, (std::vector<ProbeFetch::Deref>{{0, false}}));
  EXPECT_EQ(d->args[9].fetch.derefs, (std::vector<ProbeFetch::Deref>{{16, true}}));
}

TEST(ProbeDefinition, ReturnProbesAndUprobes) {
  auto r = parse_probe_definition("r16:kprobes/ret vfs_read ret=$retval:s64");
  ASSERT_TRUE(r.ok()) << r.error().context;
  EXPECT_TRUE(r->is_return);
  EXPECT_EQ(r->symbol, "vfs_read");
  auto pr = parse_probe_definition("p:kprobes/ret2 vfs_read%return");
  ASSERT_TRUE(pr.ok());
  EXPECT_TRUE(pr->is_return);
  auto u = parse_probe_definition("p:uprobes/u /usr/bin/true:0x00000000000011f0 n=%di:u64");
  ASSERT_TRUE(u.ok()) << u.error().context;
  EXPECT_TRUE(u->uprobe);
  EXPECT_EQ(u->path, "/usr/bin/true");
  EXPECT_EQ(u->offset, 0x11f0u);
  auto ur = parse_probe_definition("r:uprobes/ur /bin/x:0x10(0x20) v=$retval");
  ASSERT_TRUE(ur.ok()) << ur.error().context;
  EXPECT_TRUE(ur->is_return);
  EXPECT_EQ(ur->offset, 0x10u);
}

TEST(ProbeDefinition, WhatHistdCannotComputeSaysWhich) {
  for (const char* line :
       {"p:kprobes/x vfs_read f=file->f_pos", "p:kprobes/x vfs_read a=%di:b4@3/32", "p:kprobes/x vfs_read a=+8(%di",
        "x:kprobes/x vfs_read", "p:x vfs_read", "p:kprobes/x vfs_read noname", "p:kprobes/x vfs_read s=%di:%pd"}) {
    auto d = parse_probe_definition(line);
    EXPECT_FALSE(d.ok()) << line;
    if (!d.ok()) {
      EXPECT_FALSE(d.error().context.empty()) << line;
    }
  }
}

// A uprobe event as the kernel makes it for
// "p:uprobes/t BIN:0x11f0 n=%di:s64 s=+0(%si):string who=$comm".
catalog::EventFormat uprobe_format(const std::string& definition) {
  const std::string text =
      "name: t\nID: 2326\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:s64 n;\toffset:16;\tsize:8;\tsigned:1;\n"
      "\tfield:__data_loc char[] s;\toffset:24;\tsize:4;\tsigned:1;\n"
      "\tfield:__data_loc char[] who;\toffset:28;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"(%lx) n=%Ld s=\\\"%s\\\" who=\\\"%s\\\"\", REC->__probe_ip, REC->n, __get_str(s), "
      "__get_str(who)\n";
  auto f = catalog::parse_format(text, "uprobes");
  EXPECT_TRUE(f.ok());
  catalog::EventFormat format = f.ok() ? *f : catalog::EventFormat{};
  auto d = parse_probe_definition(definition);
  EXPECT_TRUE(d.ok());
  if (d.ok()) format.probe = *d;
  return format;
}

TEST(ProbeEntry, EachArgumentToItsFieldAsTheFormatLaysItOut) {
  const catalog::EventFormat f = uprobe_format("p:uprobes/t /bin/x:0x11f0 n=%di:s64 s=+0(%si):string who=$comm");
  EXPECT_EQ(f.source, catalog::EventSource::Probe);
  auto e = pipeline::probe_entry(f);
  ASSERT_TRUE(e.ok()) << e.error().context;
  EXPECT_TRUE(e->uprobe);
  EXPECT_EQ(e->fixed_size, 32u);
  ASSERT_EQ(e->values.size(), 3u);
  EXPECT_EQ(e->values[0].reg_offset, 112u);  // di
  EXPECT_EQ(e->values[0].field_offset, 16u);
  EXPECT_EQ(e->values[0].field_size, 8u);
  EXPECT_FALSE(e->values[0].string);
  EXPECT_EQ(e->values[1].reg_offset, 104u);  // si
  EXPECT_TRUE(e->values[1].string);
  EXPECT_TRUE(e->values[1].user_string);  // a uprobe reads the task's memory
  ASSERT_EQ(e->values[1].derefs.size(), 1u);
  EXPECT_TRUE(e->values[1].derefs[0].user);
  EXPECT_EQ(e->values[2].base, codegen::ProbeValue::Base::Comm);
  EXPECT_EQ(e->values[2].field_offset, 28u);
}

TEST(ProbeEntry, RefusesWhatItCannotComputeNamingTheArgument) {
  EXPECT_FALSE(pipeline::probe_entry(uprobe_format("p:uprobes/t /bin/x:0x1 n=%zz s=%si:string who=$comm")).ok());
  EXPECT_FALSE(pipeline::probe_entry(uprobe_format("r:uprobes/t /bin/x:0x1 n=$arg1 s=%si:string who=$comm")).ok());
  EXPECT_FALSE(pipeline::probe_entry(uprobe_format("p:uprobes/t /bin/x:0x1 n=$arg7 s=%si:string who=$comm")).ok());
  EXPECT_FALSE(pipeline::probe_entry(uprobe_format("p:uprobes/t /bin/x:0x1 n=@sym s=%si:string who=$comm")).ok());
  auto missing = pipeline::probe_entry(uprobe_format("p:uprobes/t /bin/x:0x1 other=%di"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().context.find("other"), std::string::npos);
  catalog::EventFormat none = uprobe_format("p:uprobes/t /bin/x:0x1");
  none.probe.reset();
  none.probe_error = "its definition is in neither kprobe_events nor uprobe_events";
  auto why = pipeline::probe_entry(none);
  ASSERT_FALSE(why.ok());
  EXPECT_NE(why.error().context.find("neither"), std::string::npos);
}

TEST(ProbeEntry, TheProgramHoldsNumbersOnlyNeverTheDefinitionsWords) {
  const catalog::EventFormat f = uprobe_format("p:uprobes/t /secret/path:0x11f0 n=%di:s64 s=+0(%si):string who=$comm");
  auto probe = pipeline::probe_entry(f);
  ASSERT_TRUE(probe.ok());
  pipeline::EventParts parts;
  parts.probe = *probe;
  auto unit = pipeline::event_unit(parts);
  ASSERT_TRUE(unit.ok());
  const std::string c = pipeline::compile_event(*unit).source;
  EXPECT_NE(c.find("SEC(\"kprobe\")"), std::string::npos);
  EXPECT_NE(c.find("histd_probe_string(rec, 24, data, v + (0LL), 1)"), std::string::npos);
  EXPECT_NE(c.find("histd_probe_comm(rec, 28, data)"), std::string::npos);
  EXPECT_NE(c.find("*(__u64 *)(rec + 16) = (__u64)v;"), std::string::npos);
  for (const char* word : {"secret", "who", "%di", "/bin"}) EXPECT_EQ(c.find(word), std::string::npos) << word;
}

}  // namespace
}  // namespace histd
