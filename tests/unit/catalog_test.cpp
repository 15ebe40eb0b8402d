// SPDX-License-Identifier: GPL-2.0-only
#include "histd/catalog.h"
#include "test_paths.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace histd::catalog {

// Readable failures for EXPECT_EQ on fields.
void PrintTo(const Field& f, std::ostream* os) {
  *os << "{" << f.name << ", \"" << f.type << "\", off " << f.offset << ", size " << f.size << ", signed "
      << f.is_signed << ", common " << f.is_common << ", kind " << static_cast<int>(f.kind) << ", len " << f.array_len
      << (f.kernel_address ? ", kernel address" : "") << "}";
}

namespace {

namespace fs = std::filesystem;

const fs::path kTree = histd::testing::test_data_dir() / "fixtures" / "tracefs";
const fs::path kBrokenTree = histd::testing::test_data_dir() / "fixtures" / "tracefs-broken";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

EventFormat parse_fixture(const std::string& system, const std::string& event) {
  std::string text = read_text(kTree / "events" / system / event / "format");
  EXPECT_FALSE(text.empty()) << system << ":" << event;
  auto parsed = parse_format(text, system);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().context);
  return parsed.ok() ? *parsed : EventFormat{};
}

Field field(std::string name, std::string type, uint32_t offset, uint32_t size, bool is_signed,
            FieldKind kind = FieldKind::Integer, uint32_t array_len = 0) {
  Field f;
  f.name = std::move(name);
  f.type = std::move(type);
  f.offset = offset;
  f.size = size;
  f.is_signed = is_signed;
  f.is_common = f.name.starts_with("common_");
  f.kind = kind;
  f.array_len = array_len;
  return f;
}

// A field the kernel prints as a kernel address.
Field address(Field f) {
  f.kernel_address = true;
  return f;
}

// The four common fields every kernel event starts with.
std::vector<Field> common_fields() {
  return {field("common_type", "unsigned short", 0, 2, false), field("common_flags", "unsigned char", 2, 1, false),
          field("common_preempt_count", "unsigned char", 3, 1, false), field("common_pid", "int", 4, 4, true)};
}

std::vector<Field> with_common(std::vector<Field> event_fields) {
  std::vector<Field> all = common_fields();
  all.insert(all.end(), event_fields.begin(), event_fields.end());
  return all;
}

TEST(FormatParser, Kmalloc) {
  EventFormat f = parse_fixture("kmem", "kmalloc");
  EXPECT_EQ(f.system, "kmem");
  EXPECT_EQ(f.name, "kmalloc");
  EXPECT_EQ(f.id, 658u);
  // call_site by its %pS, ptr by its type and its %p.
  EXPECT_EQ(f.fields,
            with_common({address(field("call_site", "unsigned long", 8, 8, false)),
                         address(field("ptr", "const void *", 16, 8, false)),
                         field("bytes_req", "size_t", 24, 8, false), field("bytes_alloc", "size_t", 32, 8, false),
                         field("gfp_flags", "unsigned long", 40, 8, false), field("node", "int", 48, 4, true)}));
  EXPECT_TRUE(f.print_fmt.starts_with("\"call_site=%pS ptr=%p bytes_req=%zu"));
  EXPECT_TRUE(f.print_fmt.ends_with("? \"true\" : \"false\"")) << f.print_fmt;
  EXPECT_EQ(f.text, read_text(kTree / "events/kmem/kmalloc/format"));
  EXPECT_EQ(f.record_size(), 52u);
  ASSERT_NE(f.find("bytes_req"), nullptr);
  EXPECT_EQ(f.find("bytes_req")->offset, 24u);
  EXPECT_EQ(f.find("no_such_field"), nullptr);
}

TEST(FormatParser, SysEnterWriteKeepsPointerAsInteger) {
  EventFormat f = parse_fixture("syscalls", "sys_enter_write");
  EXPECT_EQ(f.id, 840u);
  // Syscall arguments are 8 bytes whatever their C type.
  EXPECT_EQ(f.fields,
            with_common({field("__syscall_nr", "int", 8, 4, true), field("fd", "unsigned int", 16, 8, false),
                         field("buf", "const char *", 24, 8, false), field("count", "size_t", 32, 8, false)}));
  EXPECT_EQ(f.record_size(), 40u);
}

TEST(FormatParser, SchedProcessExecDataLoc) {
  EventFormat f = parse_fixture("sched", "sched_process_exec");
  EXPECT_EQ(f.fields, with_common({field("filename", "__data_loc char[]", 8, 4, false, FieldKind::DynamicString),
                                   field("pid", "pid_t", 12, 4, true), field("old_pid", "pid_t", 16, 4, true)}));
  EXPECT_EQ(f.print_fmt, "\"filename=%s pid=%d old_pid=%d\", __get_str(filename), REC->pid, REC->old_pid");
}

TEST(FormatParser, SchedSwitchCharArrays) {
  EventFormat f = parse_fixture("sched", "sched_switch");
  EXPECT_EQ(f.fields, with_common({field("prev_comm", "char[16]", 8, 16, false, FieldKind::CharArray, 16),
                                   field("prev_pid", "pid_t", 24, 4, true), field("prev_prio", "int", 28, 4, true),
                                   field("prev_state", "long", 32, 8, true),
                                   field("next_comm", "char[16]", 40, 16, false, FieldKind::CharArray, 16),
                                   field("next_pid", "pid_t", 56, 4, true), field("next_prio", "int", 60, 4, true)}));
  EXPECT_EQ(f.record_size(), 64u);
}

TEST(FormatParser, RawSysEnterArray) {
  EventFormat f = parse_fixture("raw_syscalls", "sys_enter");
  EXPECT_EQ(f.fields, with_common({field("id", "long", 8, 8, true),
                                   field("args", "unsigned long[6]", 16, 48, false, FieldKind::Array, 6)}));
  EXPECT_EQ(f.record_size(), 64u);
}

TEST(FormatParser, FtracePrintFlexibleBuf) {
  // `char buf[]` has size 0: the string runs to the end of the record.
  EventFormat f = parse_fixture("ftrace", "print");
  ASSERT_NE(f.find("buf"), nullptr);
  EXPECT_EQ(*f.find("buf"), field("buf", "char[]", 16, 0, false, FieldKind::CharArray, 0));
  EXPECT_EQ(f.record_size(), 16u);
}

TEST(FormatParser, FlexibleNonCharArray) {
  EventFormat f = parse_fixture("ftrace", "function");
  ASSERT_NE(f.find("args"), nullptr);
  EXPECT_EQ(*f.find("args"), field("args", "unsigned long[]", 24, 0, false, FieldKind::Array, 0));
}

TEST(FormatParser, DynamicNonStringArraysAreOther) {
  EventFormat dma = parse_fixture("dma", "dma_map_sg");
  EXPECT_EQ(*dma.find("device"), field("device", "__data_loc char[]", 8, 4, false, FieldKind::DynamicString));
  EXPECT_EQ(*dma.find("phys_addrs"), field("phys_addrs", "__data_loc u64[]", 24, 4, false, FieldKind::Other));
  EXPECT_EQ(*dma.find("lengths"), field("lengths", "__data_loc unsigned int[]", 32, 4, false, FieldKind::Other));
  EXPECT_EQ(*dma.find("truncated"), field("truncated", "bool", 20, 1, false));
  EXPECT_EQ(*dma.find("dir"), field("dir", "enum dma_data_direction", 36, 4, false));

  EventFormat ipi = parse_fixture("ipi", "ipi_send_cpumask");
  EXPECT_EQ(*ipi.find("cpumask"), field("cpumask", "__data_loc cpumask_t", 8, 4, false, FieldKind::Other));
}

TEST(FormatParser, RelLoc) {
  EventFormat f = parse_fixture("sample-trace", "foo_rel_loc");
  EXPECT_EQ(f.fields, with_common({field("bar", "u32", 8, 4, false),
                                   field("foo", "__rel_loc char[]", 12, 4, false, FieldKind::RelString),
                                   field("bitmask", "__rel_loc unsigned long[]", 16, 4, false, FieldKind::Other)}));
}

TEST(FormatParser, NetifReceiveSkbAndForkStrings) {
  EventFormat net = parse_fixture("net", "netif_receive_skb");
  EXPECT_EQ(*net.find("name"), field("name", "__data_loc char[]", 20, 4, false, FieldKind::DynamicString));
  EXPECT_EQ(*net.find("skbaddr"), address(field("skbaddr", "void *", 8, 8, false)));
  EventFormat waking = parse_fixture("sched", "sched_waking");
  EXPECT_EQ(*waking.find("comm"), field("comm", "char[16]", 8, 16, false, FieldKind::CharArray, 16));
}

TEST(FormatParser, KernelAddressesAreWhatTheKernelPrintsAsAddresses) {
  auto marked = [](std::string fields, std::string print_fmt, std::string system = "s") {
    std::string text =
        "name: e\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n" + fields +
        "\nprint fmt: " + print_fmt + "\n";
    auto f = parse_format(text, system);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().context);
    std::string out;
    for (const Field& field : f.ok() ? f->fields : std::vector<Field>{})
      if (field.kernel_address) out += (out.empty() ? "" : " ") + field.name;
    return out;
  };
  const std::string two =
      "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:unsigned long ip_count;\toffset:16;\tsize:8;\tsigned:0;\n";
  // Each address conversion, by the argument it prints.
  for (const char* conv : {"%pS", "%ps", "%pB", "%pF", "%pf", "%px", "%pK", "%p"})
    EXPECT_EQ(marked(two, std::string("\"a=") + conv + " n=%lu\", (void *)REC->ip, REC->ip_count"), "ip") << conv;
  // The argument a conversion prints counts '*' widths; a name that only
  // starts like the field is another field.
  EXPECT_EQ(marked(two, "\"%*lu %pS\", 4, REC->ip, REC->ip_count"), "ip_count");
  // What a pointer points to (%pI4, %pM, %pU) is not its address; numbers
  // printed as numbers are not addresses, even in hex.
  EXPECT_EQ(marked(two, "\"%pI4 %lx\", REC->ip, REC->ip_count"), "");
  // "%%p" is text.
  EXPECT_EQ(marked(two, "\"%%p %lu %lu\", REC->ip, REC->ip_count"), "");
  // A pointer is a kernel address whatever its conversion, except a
  // system call's arguments: the calling program's addresses.
  const std::string ptr = "\tfield:const char * buf;\toffset:8;\tsize:8;\tsigned:0;\n";
  EXPECT_EQ(marked(ptr, "\"buf=%lx\", (unsigned long)REC->buf"), "buf");
  EXPECT_EQ(marked(ptr, "\"buf=%lx\", (unsigned long)REC->buf", "syscalls"), "");
}

TEST(PrintFmt, ConversionsAndTheirArguments) {
  const auto p =
      parse_print_fmt("\"a=%d b=%*s c=%pS%%d=%pI4 e=%-08llx\", REC->a, 3, REC->b, f(REC->c, 1), REC->d, REC->e\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->format, "a=%d b=%*s c=%pS%%d=%pI4 e=%-08llx");
  ASSERT_EQ(p->args.size(), 6u);
  EXPECT_EQ(p->args[3], " f(REC->c, 1)");
  std::string seen;
  for (const PrintConversion& c : p->conversions)
    seen += fmt::format("[{}{} {} {}]", c.conversion, c.extension ? std::string(1, c.extension) : "",
                        p->format.substr(c.begin, c.end - c.begin), c.arg);
  EXPECT_EQ(seen, "[d %d 0][s %*s 2][pS %pS 3][pI %pI 4][x %-08llx 5]");
  EXPECT_FALSE(parse_print_fmt("no quote"));
  EXPECT_FALSE(parse_print_fmt("\"unterminated"));
}

TEST(FormatParser, MultiLinePrintFmt) {
  // Some ext4 events have a raw newline inside their print format.
  EventFormat f = parse_fixture("ext4", "ext4_fsmap_high_key");
  EXPECT_NE(f.print_fmt.find("%lld\n\", "), std::string::npos) << f.print_fmt;
  EXPECT_TRUE(f.print_fmt.ends_with("REC->owner")) << f.print_fmt;
}

TEST(FormatParser, CommonOnlyInFirstBlock) {
  const char* text =
      "name: e\nID: 1\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\n"
      "\tfield:int common_thing;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\n"
      "print fmt: \"\"\n";
  auto f = parse_format(text, "s");
  ASSERT_TRUE(f.ok()) << f.error().context;
  EXPECT_TRUE(f->fields[0].is_common);
  EXPECT_FALSE(f->fields[1].is_common);
  EXPECT_EQ(f->print_fmt, "\"\"");
}

TEST(FormatParser, ToleratesMissingSignedAndCrlf) {
  const char* text =
      "name: old\r\nID: 7\r\nformat:\r\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\r\n"
      "\tfield:char comm[TASK_COMM_LEN];\toffset:8;\tsize:16;\r\n"
      "\tfield:u8 addr[sizeof(x[2])];\toffset:24;\tsize:6;\tsigned:0;\tfuture:3;\r\n"
      "\r\nprint fmt: \"x\"\r\n";
  auto f = parse_format(text, "s");
  ASSERT_TRUE(f.ok()) << f.error().context;
  ASSERT_EQ(f->fields.size(), 3u);
  EXPECT_FALSE(f->fields[0].is_signed);
  // A length printed as a name: chars take it from the size, others don't know.
  EXPECT_EQ(f->fields[1], field("comm", "char[TASK_COMM_LEN]", 8, 16, false, FieldKind::CharArray, 16));
  EXPECT_EQ(f->fields[2], field("addr", "u8[sizeof(x[2])]", 24, 6, false, FieldKind::Array, 0));
}

TEST(FormatParser, OddSizedScalarIsOther) {
  auto f = parse_format(
      "name: e\nID: 1\nformat:\n\tfield:struct foo f;\toffset:8;\tsize:12;\tsigned:0;\n"
      "print fmt: \"\"\n",
      "s");
  ASSERT_TRUE(f.ok()) << f.error().context;
  EXPECT_EQ(f->fields[0], field("f", "struct foo", 8, 12, false, FieldKind::Other));
  EXPECT_EQ(f->record_size(), 20u);
}

TEST(EventFormat, RecordSizeOfNothingIsZero) { EXPECT_EQ(EventFormat{}.record_size(), 0u); }

TEST(Catalog, OpenListsFixtureEventsSorted) {
  auto cat = Catalog::open(kTree);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  std::vector<EventId> expected = {
      {"block", "block_rq_issue"},
      {"dma", "dma_map_sg"},
      {"ext4", "ext4_fsmap_high_key"},
      {"ftrace", "function"},
      {"ftrace", "print"},
      {"ipi", "ipi_send_cpumask"},
      {"kmem", "kmalloc"},
      {"net", "netif_receive_skb"},
      {"raw_syscalls", "sys_enter"},
      {"raw_syscalls", "sys_exit"},
      {"sample-trace", "foo_rel_loc"},
      {"sched", "sched_process_exec"},
      {"sched", "sched_process_exit"},
      {"sched", "sched_process_fork"},
      {"sched", "sched_switch"},
      {"sched", "sched_wakeup"},
      {"sched", "sched_waking"},
      {"syscalls", "sys_enter_getppid"},
      {"syscalls", "sys_enter_write"},
      {"syscalls", "sys_exit_write"},
  };
  ASSERT_EQ(cat->events().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(cat->events()[i].system, expected[i].system) << i;
    EXPECT_EQ(cat->events()[i].name, expected[i].name) << i;
  }
  EXPECT_EQ(cat->root(), kTree);
}

TEST(Catalog, Contains) {
  auto cat = Catalog::open(kTree);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  EXPECT_TRUE(cat->contains("sched", "sched_switch"));
  EXPECT_TRUE(cat->contains("dma", "dma_map_sg"));
  EXPECT_TRUE(cat->contains("syscalls", "sys_exit_write"));
  EXPECT_FALSE(cat->contains("sched", "sched_switc"));
  EXPECT_FALSE(cat->contains("sched", "not_an_event"));  // directory without format
  EXPECT_FALSE(cat->contains("sched", "enable"));
  EXPECT_FALSE(cat->contains("kmalloc", "kmem"));
  EXPECT_FALSE(cat->contains("", ""));
}

TEST(Catalog, EventParsesOnceAndCaches) {
  auto cat = Catalog::open(kTree);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  auto first = cat->event("sched", "sched_switch");
  ASSERT_TRUE(first.ok()) << first.error().context;
  EXPECT_EQ((*first)->system, "sched");
  EXPECT_EQ((*first)->name, "sched_switch");
  EXPECT_EQ((*first)->id, 372u);
  auto second = cat->event("sched", "sched_switch");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());
  auto other = cat->event("kmem", "kmalloc");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(first->get(), other->get());
}

TEST(Catalog, EveryFixtureEventParses) {
  auto cat = Catalog::open(kTree);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  for (const EventId& id : cat->events()) {
    auto f = cat->event(id.system, id.name);
    ASSERT_TRUE(f.ok()) << id.system << ":" << id.name << ": " << f.error().context;
    EXPECT_EQ(std::to_string((*f)->id) + "\n", read_text(kTree / "events" / id.system / id.name / "id"));
    size_t common = 0;
    while (common < (*f)->fields.size() && (*f)->fields[common].is_common) ++common;
    EXPECT_EQ(common, 4u) << id.name;
  }
}

TEST(Catalog, UnknownEventIsNotFound) {
  auto cat = Catalog::open(kTree);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  for (auto [sys, ev] : std::vector<std::pair<const char*, const char*>>{
           {"sched", "nope"}, {"nope", "sched_switch"}, {"sched", "../kmem/kmalloc"}, {"sched", "not_an_event"}}) {
    auto r = cat->event(sys, ev);
    ASSERT_FALSE(r.ok()) << ev;
    EXPECT_EQ(r.error().kind, ErrorKind::NotFound);
    EXPECT_EQ(r.error().err, ENOENT);
    EXPECT_NE(r.error().context.find(std::string(sys) + ":" + ev), std::string::npos) << r.error().context;
  }
}

// A probe event made after start is found by name, served while it exists,
// and forgotten when it goes; a root that vanishes says so.
TEST(Catalog, EventsMadeAfterOpenAreFoundByNameUntilTheyGo) {
  const fs::path root = fs::temp_directory_path() / ("histd-catalog-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "events" / "sched" / "sched_switch");
  fs::copy_file(kTree / "events" / "sched" / "sched_switch" / "format",
                root / "events" / "sched" / "sched_switch" / "format");
  auto cat = Catalog::open(root);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  EXPECT_FALSE(cat->contains("uprobes", "p1"));
  const fs::path dir = root / "events" / "uprobes" / "p1";
  fs::create_directories(dir);
  std::ofstream(dir / "format") << "name: p1\nID: 2000\nformat:\n"
                                   "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                                   "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
                                   "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n\n"
                                   "print fmt: \"(%lx)\", REC->__probe_ip\n";
  EXPECT_TRUE(cat->contains("uprobes", "p1"));
  auto f = cat->event("uprobes", "p1");
  ASSERT_TRUE(f.ok()) << f.error().context;
  EXPECT_NE((*f)->find("__probe_ip"), nullptr);
  ASSERT_EQ(cat->discovered_events().size(), 1u);
  EXPECT_EQ(cat->live_events("uprobes"), std::vector<std::string>{"p1"});
  EXPECT_FALSE(cat->contains("uprobes", "../sched/sched_switch"));
  fs::remove_all(dir);
  EXPECT_FALSE(cat->contains("uprobes", "p1"));
  EXPECT_TRUE(cat->discovered_events().empty());
  EXPECT_FALSE(cat->event("uprobes", "p1").ok());
  // Formats already read stay when the tree goes; others say it went.
  ASSERT_TRUE(cat->event("sched", "sched_switch").ok());
  fs::remove_all(root);
  EXPECT_TRUE(cat->event("sched", "sched_switch").ok());
  fs::create_directories(root);
  fs::copy(kTree, root, fs::copy_options::recursive);
  auto copy = Catalog::open(root);
  ASSERT_TRUE(copy.ok()) << copy.error().context;
  fs::remove_all(root);
  auto r = copy->event("kmem", "kmalloc");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, ENOENT);
  EXPECT_NE(r.error().context.find("cannot read the format of kmem:kmalloc: tracefs is no longer mounted at " +
                                   root.string()),
            std::string::npos)
      << r.error().context;
}

TEST(Catalog, MissingRootIsNotFound) {
  auto r = Catalog::open(kTree / "no_such_dir");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::NotFound);
  EXPECT_EQ(r.error().err, ENOENT);
  // A directory without events/ is not a tracefs root either.
  auto r2 = Catalog::open(kTree / "events");
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().kind, ErrorKind::NotFound);
}

TEST(Catalog, MalformedFormatIsInvalidWithPath) {
  auto cat = Catalog::open(kBrokenTree);
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  ASSERT_TRUE(cat->contains("broken", "bad_size"));
  auto r = cat->event("broken", "bad_size");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Invalid);
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_NE(r.error().context.find("bad_size/format: format line 9: bad size value 'eight'"), std::string::npos)
      << r.error().context;
}

// Robustness against the real kernel: every format on this machine parses.
TEST(Catalog, RealTracefsParsesEverything) {
  const fs::path root = "/sys/kernel/tracing";
  std::error_code ec;
  if (!fs::is_directory(root / "events", ec) || !std::ifstream(root / "events/sched/sched_switch/format").good()) {
    GTEST_SKIP() << "/sys/kernel/tracing/events is not readable here (needs root and tracefs)";
  }
  auto start = std::chrono::steady_clock::now();
  auto cat = Catalog::open(root);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(cat.ok()) << cat.error().context;
  EXPECT_GT(cat->events().size(), 100u);
  std::cout << "[          ] Catalog::open(" << root.string() << "): " << cat->events().size() << " events in "
            << std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count() << " us\n";
  for (const EventId& id : cat->events()) {
    auto f = cat->event(id.system, id.name);
    EXPECT_TRUE(f.ok()) << id.system << ":" << id.name << ": " << f.error().context;
  }
}

}  // namespace
}  // namespace histd::catalog
