// SPDX-License-Identifier: GPL-2.0-only
// Codegen: the generated unit compiles (clang, no root needed), never
// contains user text, and matches a few goldens.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "golden.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "histd/codegen.h"
#include "histd/pipeline.h"
#include "histd/runtime.h"
#include "histd/synth.h"
#include "test_support.h"

namespace histd::codegen {
namespace {

using histd::testing::sys_enter_write;

void expect_golden(const std::string& name, const std::string& actual) {
  histd::testing::expect_golden("codegen", name, actual);
}

std::string compile_ok(const std::string& cmd) {
  auto r = pipeline::compile(cmd, sys_enter_write());
  EXPECT_TRUE(r.ok()) << cmd << ": " << (r.ok() ? "" : r.error().message());
  return r.ok() ? r->unit.source : "";
}

TEST(Codegen, Golden) {
  expect_golden("keys_fd_vals_count_filter.c",
                compile_ok("hist:keys=fd:vals=count if count > 10 && __syscall_nr != -1"));
  expect_golden("log2_string_key.c", compile_ok("hist:keys=count.log2,comm:vals=hitcount"));
}

TEST(Codegen, GeneratedUnitsCompile) {
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  for (const char* cmd :
       {"hist:keys=fd:vals=count if count > 10 && __syscall_nr != -1", "hist:keys=count.log2,comm:vals=hitcount",
        "hist:keys=common_pid,cpu,fd.hex:vals=count.hex,buf:sort=count.descending,fd",
        "hist:keys=count.buckets=10 if !(fd & 1) || (count <= 3 && count >= 1)"}) {
    auto obj = compiler.compile(compile_ok(cmd));
    ASSERT_TRUE(obj.ok()) << cmd << "\n" << obj.error().context;
    EXPECT_GT(obj->size(), 0u);
  }
}

// A synthetic event's stack field as a key copies the frames after the
// field's frame count, bounded by the key, and the unit compiles.
TEST(Codegen, AStackFieldKeyCompiles) {
  auto def = synth::parse_synth_command("block_lat pid_t pid; u64 delta; unsigned long[] stack;");
  ASSERT_TRUE(def.ok());
  auto r = pipeline::compile("hist:keys=delta.buckets=100,stack.stacktrace:sort=delta",
                             synth::format_of(def->definition, 2000));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_NE(r->unit.source.find("bpf_probe_read_kernel(key->k1, n, (const char *)rec + (loc & 0xffff) + 8);"),
            std::string::npos)
      << r->unit.source;
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  auto obj = compiler.compile(r->unit.source);
  ASSERT_TRUE(obj.ok()) << obj.error().context;
}

// A page of `&&` (or `||`) terms is one flat chain: nested pair by pair it
// passed clang's bracket limit of 256, and a command the parser accepts
// failed to compile (found restoring a 4095-byte saved trigger).
TEST(Codegen, RecordingUnitsCompile) {
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  RecordInput r{7, 3, 40, {{8, false}, {12, true}}};
  auto trigger = pipeline::plan_command("hist:keys=fd", sys_enter_write());
  ASSERT_TRUE(trigger.ok());
  for (bool with_trigger : {false, true}) {
    std::vector<TriggerInput> triggers;
    if (with_trigger) triggers.push_back(TriggerInput{&trigger->plan, 0, {}, 0});
    const std::string src = generate_event_unit(triggers, {}, {}, {}, &r).source;
    // The end of each dynamic field's data: from the record (__data_loc) or
    // from after its location word (__rel_loc).
    EXPECT_NE(src.find("__u32 end = 0u + (loc & 0xffff) + (loc >> 16);"), std::string::npos) << src;
    EXPECT_NE(src.find("__u32 end = 16u + (loc & 0xffff) + (loc >> 16);"), std::string::npos) << src;
    auto obj = compiler.compile(src);
    ASSERT_TRUE(obj.ok()) << obj.error().context;
  }
}

TEST(Codegen, APageOfFilterTermsCompiles) {
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  for (const char* op : {" && ", " || "}) {
    std::string cmd = "hist:keys=fd if fd != 1";
    for (int n = 2; cmd.size() < 4000; ++n) cmd += fmt::format("{}(fd != {} && !(count == {}))", op, n, n);
    const std::string src = compile_ok(cmd);
    ASSERT_FALSE(src.empty());
    auto obj = compiler.compile(src);
    ASSERT_TRUE(obj.ok()) << op << "\n" << obj.error().context.substr(0, 2000);
  }
}

TEST(Codegen, SyscallEntriesRebuildTheRecordAndCompile) {
  auto planned = pipeline::compile("hist:keys=fd:vals=count:ts=common_timestamp", sys_enter_write());
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  using Kind = codegen::EventEntry::Kind;
  const std::vector<std::pair<codegen::EventEntry, std::string>> entries = {
      {{Kind::Tracepoint, 0}, "HISTD_EVENT_ENTRY(handle, 1, 0)\n"},
      {{Kind::SyscallEnter, 3}, "HISTD_SYSCALL_ENTER_ENTRY(handle, 1, 0, 3)\n"},
      {{Kind::SyscallExit, 0}, "HISTD_SYSCALL_EXIT_ENTRY(handle, 1, 0)\n"},
  };
  for (auto [entry, line] : entries)
    for (bool test_entry : {false, true}) {
      entry.test_entry = test_entry;
      const std::string src =
          codegen::generate_event_unit({codegen::TriggerInput{&planned->plan, 0}}, {}, {}, entry).source;
      EXPECT_NE(src.find(line), std::string::npos) << line;
      size_t entries_n = 0;
      for (size_t at = src.find("_ENTRY("); at != std::string::npos; at = src.find("_ENTRY(", at + 1)) ++entries_n;
      EXPECT_EQ(entries_n, test_entry ? 2u : 1u) << "the event entry, and the test entry if asked: " << line;
      // injection is the same for all
      EXPECT_EQ(src.find("HISTD_TEST_ENTRY(handle, 1)\n") != std::string::npos, test_entry) << line;
      auto obj = compiler.compile(src);
      ASSERT_TRUE(obj.ok()) << line << obj.error().context;
    }
}

// Only events whose records histd hands over get the test entry offline
// (pipeline::compile shows what the engine loads): an attached event's
// unit would compile and verify it for nothing.
TEST(Codegen, OnlyInjectedEventsHaveTheTestEntry) {
  using Source = catalog::EventSource;
  for (Source s : {Source::Tracepoint, Source::RawSyscall, Source::Probe}) EXPECT_FALSE(pipeline::injected_only(s));
  for (Source s : {Source::Synthetic, Source::Marker}) EXPECT_TRUE(pipeline::injected_only(s));
  EXPECT_EQ(compile_ok("hist:keys=fd").find("HISTD_TEST_ENTRY"), std::string::npos);
}

// A unit of an event's chain (docs/design/bpf.md, "Program chains") declares
// the dispatcher's program array and the read-only slot it tail-calls next,
// on every entry the chain has; one holding no trigger only passes on.
TEST(Codegen, ChainedUnitsNameTheArrayAndTheNextSlotAndCompile) {
  auto planned = pipeline::compile("hist:keys=fd:vals=count", sys_enter_write());
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  using Kind = codegen::EventEntry::Kind;
  for (Kind kind : {Kind::Tracepoint, Kind::SyscallEnter, Kind::SyscallExit}) {
    for (bool empty : {false, true}) {
      codegen::EventEntry entry{kind, 3};
      entry.chained = true;
      std::vector<codegen::TriggerInput> triggers;
      if (!empty) triggers.push_back(codegen::TriggerInput{&planned->plan, 0});
      const std::string src = codegen::generate_event_unit(triggers, {}, {}, entry).source;
      // The define comes after the lines every unit opens with (histd-cc
      // precompiles those) and before the chain's header that reads it.
      const std::string prelude = "#include <linux/bpf.h>\n#include \"hist_helpers.bpf.h\"\n";
      EXPECT_EQ(src.find("#define HISTD_CHAINED 1\n#include \"chain.bpf.h\"\n"), src.find(prelude) + prelude.size())
          << src;
      auto obj = compiler.compile(src);
      ASSERT_TRUE(obj.ok()) << obj.error().context;
      EXPECT_NE(obj->find(codegen::kChainMap), std::string::npos);
      EXPECT_NE(obj->find(codegen::kChainNextSlot), std::string::npos);
    }
  }
  const std::string alone = codegen::generate_event_unit({codegen::TriggerInput{&planned->plan, 0}}, {}, {}, {}).source;
  EXPECT_EQ(alone.find("HISTD_CHAINED"), std::string::npos);
  auto obj = compiler.compile(alone);
  ASSERT_TRUE(obj.ok());
  EXPECT_EQ(obj->find(codegen::kChainMap), std::string::npos);
}

TEST(Codegen, UserTextNeverReachesTheSource) {
  // Names, filter text and the table name appear nowhere in the unit:
  // only synthesized identifiers and re-printed numbers do.
  const std::string src = compile_ok("hist:name=evil_name_x:keys=comm:vals=count if count == 0x1234 && fd < 077");
  for (const char* word : {"evil_name_x", "comm", "count", "fd", "077"})
    EXPECT_FALSE(std::regex_search(src, std::regex(std::string("\\b") + word + "\\b"))) << word;
  auto compiled = pipeline::compile("hist:keys=comm:vals=count if count == 0x1234 && fd < 077", sys_enter_write());
  ASSERT_TRUE(compiled.ok());
  // The numbers are values the program is loaded with, in the order the
  // unit reads them: the parsed number, octal 077 as 63, then the
  // trigger's control slot.
  EXPECT_EQ(compiled->unit.constants, (std::vector<uint64_t>{0x1234, 63, 0}));
  EXPECT_NE(compiled->unit.source.find("histd_k[0]"), std::string::npos);
  EXPECT_NE(compiled->unit.source.find("histd_k[1]"), std::string::npos);
}

// Triggers that differ only in the numbers their filters compare with are
// one text (one compiled object for the cache), each with its own values;
// a different operator or field is a different text.
TEST(Codegen, FilterNumbersAreValuesNotText) {
  auto unit = [](const std::string& cmd) {
    auto r = pipeline::compile(cmd, sys_enter_write());
    EXPECT_TRUE(r.ok()) << cmd;
    return r.ok() ? r->unit : codegen::GeneratedUnit{};
  };
  const codegen::GeneratedUnit a = unit("hist:keys=fd if common_pid == 1234 && count > 10");
  const codegen::GeneratedUnit b = unit("hist:keys=fd if common_pid == 5678 && count > 0x7fffffff");
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.constants, (std::vector<uint64_t>{1234, 10, 0}));  // then its control slot
  EXPECT_EQ(b.constants, (std::vector<uint64_t>{5678, 0x7fffffff, 0}));
  EXPECT_NE(unit("hist:keys=fd if common_pid != 1234 && count > 10").source, a.source);
  EXPECT_NE(unit("hist:keys=fd if common_pid == 1234 && fd > 10").source, a.source);
  EXPECT_NE(a.source.find("const volatile __u64 histd_k[3] SEC(\".rodata.consts\")"), std::string::npos);
  EXPECT_EQ(unit("hist:keys=fd").constants, (std::vector<uint64_t>{0}));
  // What source and explain print after the unit: the values it reads.
  EXPECT_EQ(codegen::constants_comment(a.constants), "/* histd: histd_k[] = 0x4d2 0xa 0x0 */\n");
  EXPECT_EQ(codegen::constants_comment({}), "");
}

// Triggers that differ only in which numeric fields of a size and sign
// they read are one text too: the text names struct histd_rec's members,
// and the unit says where each is; signedness or size makes another text.
TEST(Codegen, FieldOffsetsAreValuesNotText) {
  auto unit = [](const std::string& cmd) {
    auto r = pipeline::compile(cmd, sys_enter_write());
    EXPECT_TRUE(r.ok()) << cmd;
    return r.ok() ? r->unit : codegen::GeneratedUnit{};
  };
  using Field = codegen::RecordField;
  const codegen::GeneratedUnit fd = unit("hist:keys=fd:vals=count");
  const codegen::GeneratedUnit count = unit("hist:keys=count:vals=fd");
  EXPECT_EQ(fd.source, count.source);
  EXPECT_EQ(fd.fields, (std::vector<Field>{{16, 8, false}, {32, 8, false}}));
  EXPECT_EQ(count.fields, (std::vector<Field>{{32, 8, false}, {16, 8, false}}));
  EXPECT_EQ(fd.source.find("HISTD_LOAD_"), std::string::npos) << fd.source;
  EXPECT_NE(fd.source.find("struct histd_rec {\n  __u64 f0;\n  __u64 f1;\n} __attribute__((preserve_access_index));"),
            std::string::npos);
  // One member for a field read in several places.
  EXPECT_EQ(unit("hist:keys=fd:vals=fd if fd > 2").fields, (std::vector<Field>{{16, 8, false}}));
  const codegen::GeneratedUnit nr = unit("hist:keys=__syscall_nr:vals=count");
  EXPECT_EQ(nr.fields, (std::vector<Field>{{8, 4, true}, {32, 8, false}}));
  EXPECT_NE(nr.source, fd.source);
  EXPECT_EQ(codegen::record_fields_comment(fd.fields), "/* histd: struct histd_rec: f0 at 16 f1 at 32 */\n");
  EXPECT_EQ(codegen::values_comment(fd),
            "/* histd: histd_k[] = 0x0 */\n/* histd: struct histd_rec: f0 at 16 f1 at 32 */\n");
  EXPECT_EQ(unit("hist:keys=common_pid").fields, (std::vector<Field>{}));
}

// A table's size= is the engine's map's, not the text's: triggers that
// differ only in it are one text. Below 256 entries the hot slots shrink
// with the table (their index is code), so that is another text.
TEST(Codegen, TableSizeIsNotText) {
  auto source = [](const std::string& cmd) {
    auto r = pipeline::compile(cmd, sys_enter_write());
    EXPECT_TRUE(r.ok()) << cmd;
    return r.ok() ? r->unit.source : std::string();
  };
  const std::string plain = source("hist:keys=fd:vals=count");
  EXPECT_EQ(source("hist:keys=fd:vals=count:size=4096"), plain);
  EXPECT_EQ(source("hist:keys=fd:vals=count:size=256"), plain);
  EXPECT_NE(source("hist:keys=fd:vals=count:size=64"), plain);
  EXPECT_EQ(plain.find("max_entries, 2048"), std::string::npos) << plain;
  // The variables' map of a named table likewise.
  const std::string vars = source("hist:name=t:keys=common_pid:ts0=common_timestamp");
  EXPECT_NE(vars.find("} var0 SEC(\".maps\")"), std::string::npos) << vars;
  EXPECT_EQ(source("hist:name=t:keys=common_pid:ts0=common_timestamp:size=8192"), vars);
  EXPECT_EQ(vars.find("max_entries, 2048"), std::string::npos) << vars;
}

// sys_enter_write with a variable (evil_var_x) and onmax/save; another
// trigger that references it and generates the synthetic event evil_synth_x.
struct InterEventUnit {
  plan::HistPlan owner, user, on_synth;
  synth::SynthDefinition def;  // evil_synth_x
  std::string source;
};

InterEventUnit inter_event_unit() {
  InterEventUnit u;
  auto parse = [](const std::string& text) {
    auto c = parse::parse_hist(text);
    EXPECT_TRUE(c.ok()) << text;
    return c.ok() ? *c : parse::HistCommand{};
  };
  auto owner = plan::plan_hist(parse("hist:keys=fd:evil_var_x=count*3+fd/7:"
                                     "onmax($evil_var_x).save(comm,buf)"),
                               sys_enter_write());
  EXPECT_TRUE(owner.ok()) << (owner.ok() ? "" : owner.error().message());
  if (!owner.ok()) return u;
  u.owner = *owner;
  plan::PlanContext reg;
  // As the registry registers it: after the owner's values in its table,
  // the record's only variable.
  reg.vars.push_back(plan::registered_var(u.owner, u.owner.vars[0], 1));
  synth::SynthDefinition def;
  def.name = "evil_synth_x";
  synth::SynthField lat{"u64", "lat", synth::SynthField::Kind::Integer, 8, false, 0, 8};
  synth::SynthField name{"char[]", "name", synth::SynthField::Kind::DynamicString, 4, true, 0, 16};
  def.fields = {lat, name};
  reg.synths.push_back(def);
  u.def = def;
  auto user = plan::plan_hist(parse("hist:keys=fd:d=count/fd-$evil_var_x:"
                                    "onmatch(syscalls.sys_enter_write).evil_synth_x($d,comm) if count > 1"),
                              sys_enter_write(), reg);
  EXPECT_TRUE(user.ok()) << (user.ok() ? "" : user.error().message());
  if (!user.ok()) return u;
  u.user = *user;
  // The synthetic event's own trigger, inlined where it is generated.
  auto on_synth = plan::plan_hist(parse("hist:keys=lat.log2"), synth::format_of(def, 0xf000));
  EXPECT_TRUE(on_synth.ok()) << (on_synth.ok() ? "" : on_synth.error().message());
  if (!on_synth.ok()) return u;
  u.on_synth = *on_synth;
  TriggerInput a{&u.owner, 0, {}};
  TriggerInput b{&u.user, 1, {SynthTarget{0xf000, 2, 3, 24, 24 + 256, 0}}};
  a.synths.resize(u.owner.actions.size());
  InlinedEvent synth_event{{TriggerInput{&u.on_synth, 4, {}, 1}}, {}};
  u.source = generate_event_unit({a, b}, {}, {synth_event}).source;
  return u;
}

TEST(Codegen, InterEventGoldenAndCompiles) {
  const InterEventUnit u = inter_event_unit();
  ASSERT_FALSE(u.source.empty());
  expect_golden("inter_event.c", u.source);
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  auto obj = compiler.compile(u.source);
  ASSERT_TRUE(obj.ok()) << obj.error().context;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A unit's triggers are inlined into its entry while their stacks, added up,
// stay within the budget; past it every one is a subprogram again, and a
// unit with an enable trigger inlines none. Both forms compile.
TEST(Codegen, TriggersAreInlinedWhileTheirStacksFit) {
  auto small = pipeline::plan_command("hist:keys=fd", sys_enter_write());
  auto large = pipeline::plan_command("hist:keys=common_stacktrace:vals=count", sys_enter_write());
  ASSERT_TRUE(small.ok() && large.ok());
  auto unit = [](const plan::HistPlan& p, size_t n, std::vector<ControlInput> controls = {}) {
    std::vector<TriggerInput> triggers;
    for (size_t i = 0; i < n; ++i) triggers.push_back(TriggerInput{&p, static_cast<uint32_t>(i)});
    return generate_event_unit(triggers, controls, {}, {}).source;
  };
  const std::string inlined = "static __always_inline void trigger_";
  const std::string called = "static __attribute__((noinline)) void trigger_";
  size_t most = 1;
  while (most < 64 && count(unit(small->plan, most + 1), called) == 0) ++most;
  EXPECT_GE(most, 4u);
  EXPECT_LT(most, 64u);
  EXPECT_EQ(count(unit(small->plan, most), inlined), most);
  EXPECT_EQ(count(unit(small->plan, most + 1), called), most + 1);
  EXPECT_EQ(count(unit(large->plan, 1), inlined), 1u);
  EXPECT_EQ(count(unit(large->plan, 3), called), 3u);
  ControlInput enable{parse::ControlCommand::Kind::EnableHist, nullptr, 9, {0}};
  EXPECT_EQ(count(unit(small->plan, 2, {enable}), called), 2u);
  auto paths = runtime::find_bpf_paths();
  ASSERT_TRUE(paths.ok()) << paths.error().context;
  runtime::Compiler compiler(*paths, {});
  for (const std::string& src : {unit(small->plan, most), unit(small->plan, most + 1), unit(large->plan, 3)}) {
    auto obj = compiler.compile(src);
    ASSERT_TRUE(obj.ok()) << obj.error().context;
  }
}

// A record's set bits: stored and cleared plainly where the record holds
// one variable (the kernel's tracing_map does no more), with locked
// operations where another CPU may be setting another variable's bit.
TEST(Codegen, SetBitsOfSeveralVariablesAreChangedAtomically) {
  for (const bool several : {false, true}) {
    auto owner =
        pipeline::plan_command(several ? "hist:keys=fd:a=count:b=fd" : "hist:keys=fd:a=count", sys_enter_write());
    ASSERT_TRUE(owner.ok());
    plan::PlanContext reg;
    for (const plan::Variable& v : owner->plan.vars) reg.vars.push_back(plan::registered_var(owner->plan, v, 1));
    auto parsed = parse::parse_hist("hist:keys=fd:d=count-$a");
    ASSERT_TRUE(parsed.ok());
    auto user = plan::plan_hist(*parsed, sys_enter_write(), reg);
    ASSERT_TRUE(user.ok()) << user.error().message();
    const std::string src =
        generate_event_unit({TriggerInput{&owner->plan, 0}, TriggerInput{&*user, 1}}, {}, {}, {}).source;
    EXPECT_EQ(src.find("__sync_fetch_and_or(&vr->w[0], 0x3ULL);") != std::string::npos, several) << src;
    EXPECT_EQ(src.find("__sync_fetch_and_and(&x->w[0], ~0x1ULL);") != std::string::npos, several) << src;
    EXPECT_EQ(src.find("    x->w[0] = 0;\n") != std::string::npos, !several) << src;
    // The reader's own record holds d alone.
    EXPECT_NE(src.find("vr->w[0] = 0x1ULL;"), std::string::npos) << src;
  }
}

// The engine's path: the same unit, from the parts the engine reads from its
// state (pipeline::EventParts), resolved and compiled by the pipeline.
TEST(Codegen, InterEventUnitFromItsParts) {
  const InterEventUnit u = inter_event_unit();
  ASSERT_FALSE(u.source.empty());
  pipeline::EventParts parts;
  parts.own.hist = {{&u.owner, 0}, {&u.user, 1}};
  pipeline::SynthSink& sink = parts.synths["evil_synth_x"];
  sink.def = &u.def;
  sink.id = 0xf000;
  sink.control_slot = 2;
  sink.trace_slot = 3;
  sink.triggers.hist = {{&u.on_synth, 4}};
  auto unit = pipeline::event_unit(parts);
  ASSERT_TRUE(unit.ok()) << unit.error().context;
  EXPECT_EQ(pipeline::compile_event(*unit).source, u.source);
  EXPECT_EQ(unit->numbered(), (std::vector<const plan::HistPlan*>{&u.owner, &u.user, &u.on_synth}));
}

TEST(Codegen, InterEventNamesNeverReachTheSource) {
  const InterEventUnit u = inter_event_unit();
  ASSERT_FALSE(u.source.empty());
  for (const char* word : {"evil_var_x", "evil_synth_x", "comm", "count", "buf", "lat", "name"})
    EXPECT_FALSE(std::regex_search(u.source, std::regex(std::string("\\b") + word + "\\b"))) << word;
}

// A helper call per event costs about as much as a table update: the entry
// asks for common_pid only when something in the unit reads it.
TEST(Codegen, TheEntryAsksForCommonPidOnlyWhenRead) {
  const std::vector<std::pair<std::string, bool>> cases = {
      {"hist:keys=fd", false},
      {"hist:keys=count.log2:vals=count", false},
      {"hist:keys=fd if comm == \"bash\"", false},
      {"hist:keys=common_pid", true},
      {"hist:keys=fd:vals=common_pid", true},
      {"hist:keys=fd if common_pid != 1", true},
      {"hist:keys=fd:p=common_pid", true},
      {"hist:keys=fd:m=count:onmax($m).save(common_pid)", true},
  };
  for (const auto& [cmd, reads] : cases) {
    const std::string src = compile_ok(cmd);
    const std::string entry = fmt::format("HISTD_EVENT_ENTRY(handle, 0, {})\n", reads ? 1 : 0);
    EXPECT_NE(src.find(entry), std::string::npos) << cmd << ": expected " << entry;
  }
  // A generated synthetic record starts with the task's pid, which the
  // entry leaves unread (a traced record asks for it, histd_synth_trace)...
  const InterEventUnit u = inter_event_unit();
  EXPECT_NE(u.source.find("histd_synth_begin("), std::string::npos);
  EXPECT_NE(u.source.find("HISTD_EVENT_ENTRY(handle, 0, 0)\n"), std::string::npos) << u.source;
  // ... unless a param sends it.
  plan::HistPlan user = u.user;
  ASSERT_FALSE(user.actions.empty());
  ASSERT_FALSE(user.actions[0].params.empty());
  plan::ExprOp pid;
  pid.kind = plan::ExprOp::Kind::Field;
  pid.access.source = plan::Source::CommonPid;
  plan::TypedExpr& sent = user.actions[0].params[0].value;
  sent.ops = {pid};
  sent.root = 0;
  TriggerInput a{&u.owner, 0, {}};
  a.synths.resize(u.owner.actions.size());
  TriggerInput b{&user, 1, {SynthTarget{0xf000, 2, 3, 24, 24 + 256, 0}}};
  const std::string sends_pid = generate_event_unit({a, b}, {}, {}).source;
  EXPECT_NE(sends_pid.find("HISTD_EVENT_ENTRY(handle, 0, 1)\n"), std::string::npos) << sends_pid;
}

}  // namespace
}  // namespace histd::codegen
