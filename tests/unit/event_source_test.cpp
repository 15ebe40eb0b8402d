// SPDX-License-Identifier: GPL-2.0-only
// EventSource: what kind of event a format describes, decided once by the
// catalog from the format (its system, name and fields).
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "histd/catalog.h"
#include "histd/synth.h"
#include "test_paths.h"

namespace histd::catalog {
namespace {

namespace fs = std::filesystem;

const fs::path kTree = histd::testing::test_data_dir() / "fixtures" / "tracefs";

EventSource source_of(const Catalog& c, const char* system, const char* event) {
  auto f = c.event(system, event);
  EXPECT_TRUE(f.ok()) << system << ":" << event;
  return f.ok() ? (*f)->source : EventSource::Tracepoint;
}

TEST(EventSource, FixtureEventsByKind) {
  auto c = Catalog::open(kTree);
  ASSERT_TRUE(c.ok()) << c.error().context;
  EXPECT_EQ(source_of(*c, "kmem", "kmalloc"), EventSource::Tracepoint);
  EXPECT_EQ(source_of(*c, "sched", "sched_switch"), EventSource::Tracepoint);
  // The raw tracepoints themselves are tracepoints; the classic syscall
  // events are what they can stand in for.
  EXPECT_EQ(source_of(*c, "raw_syscalls", "sys_enter"), EventSource::Tracepoint);
  EXPECT_EQ(source_of(*c, "ftrace", "print"), EventSource::Marker);
  EXPECT_EQ(source_of(*c, "ftrace", "function"), EventSource::Marker);
  auto write = c->event("syscalls", "sys_enter_write");
  ASSERT_TRUE(write.ok());
#if defined(__x86_64__)
  EXPECT_EQ((*write)->source, EventSource::RawSyscall);
  ASSERT_TRUE((*write)->syscall.has_value());
  EXPECT_EQ(*(*write)->syscall, *syscall_event(**write));
  EXPECT_EQ(source_of(*c, "syscalls", "sys_exit_write"), EventSource::RawSyscall);
#else
  EXPECT_EQ((*write)->source, EventSource::Tracepoint);
  EXPECT_FALSE((*write)->syscall.has_value());
#endif
  for (const EventId& id : c->events()) {
    auto f = c->event(id.system, id.name);
    if (!f.ok()) continue;
    EXPECT_EQ((*f)->source, event_source(**f)) << id.system << ":" << id.name;
    EXPECT_EQ((*f)->syscall, syscall_event(**f)) << id.system << ":" << id.name;
    EXPECT_EQ((*f)->syscall.has_value(), (*f)->source == EventSource::RawSyscall) << id.system << ":" << id.name;
  }
}

TEST(EventSource, ProbeEventsByTheirProbeAddress) {
  auto f = parse_format(
      "name: p1\nID: 2000\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n\n"
      "print fmt: \"(%lx)\", REC->__probe_ip\n",
      "uprobes");
  ASSERT_TRUE(f.ok()) << f.error().context;
  EXPECT_EQ(f->source, EventSource::Probe);
  EXPECT_FALSE(f->syscall.has_value());
}

TEST(EventSource, SyntheticEventsWhereverTheirFormatIsMade) {
  auto cmd = synth::parse_synth_command("wakeup_latency u64 lat; pid_t pid");
  ASSERT_TRUE(cmd.ok());
  EventFormat made = synth::format_of(cmd->definition, 1000);
  EXPECT_EQ(made.system, kSynthSystem);
  EXPECT_EQ(made.source, EventSource::Synthetic);
  auto c = Catalog::open(kTree);
  ASSERT_TRUE(c.ok());
  made.source = EventSource::Tracepoint;  // the catalog decides again as it adds it
  c->add_dynamic(made);
  EXPECT_EQ(source_of(*c, kSynthSystem, "wakeup_latency"), EventSource::Synthetic);
  EXPECT_EQ(c->source(kSynthSystem, "wakeup_latency"), EventSource::Synthetic);
  // Gone from the catalog, an event is still known by its system's name.
  c->remove_dynamic(kSynthSystem, "wakeup_latency");
  EXPECT_EQ(c->source(kSynthSystem, "wakeup_latency"), EventSource::Synthetic);
  EXPECT_EQ(c->source(kMarkerSystem, "no_such_event"), EventSource::Marker);
  EXPECT_EQ(c->source("kmem", "no_such_event"), EventSource::Tracepoint);
  EXPECT_EQ(c->source(kMarkerSystem, kMarkerEvent), EventSource::Marker);
}

TEST(EventSource, ByNameAlone) {
  EXPECT_EQ(event_source(std::string_view(kSynthSystem)), EventSource::Synthetic);
  EXPECT_EQ(event_source(std::string_view("ftrace")), EventSource::Marker);
  EXPECT_EQ(event_source(std::string_view("syscalls")), EventSource::Tracepoint);
  EXPECT_EQ(event_source(std::string_view("kprobes")), EventSource::Tracepoint);
  EXPECT_EQ(event_source(std::string_view("synthetics")), EventSource::Tracepoint);
}

// Each kind's row: where its records come from decides the rest.
TEST(EventSource, EachKindsRowSaysWhereItsRecordsComeFrom) {
  const EventSource all[] = {EventSource::Tracepoint, EventSource::RawSyscall, EventSource::Synthetic,
                             EventSource::Marker, EventSource::Probe};
  std::vector<EventSource> kernel, injected, registers, no_enable, eprobe_targets;
  for (const EventSource s : all) {
    const EventSourceTraits& t = source_traits(s);
    EXPECT_EQ(t.source, s);
    // Records come from one place: the kernel's tracepoint, histd, or the
    // registers at a probe.
    EXPECT_EQ(int{t.kernel_tracepoint} + int{t.injected} + int{t.record_from_registers}, 1) << static_cast<int>(s);
    if (t.kernel_tracepoint) kernel.push_back(s);
    if (t.injected) injected.push_back(s);
    if (t.record_from_registers) registers.push_back(s);
    if (!t.has_enable_file) no_enable.push_back(s);
    if (t.eprobe_target) eprobe_targets.push_back(s);
  }
  EXPECT_EQ(kernel, (std::vector<EventSource>{EventSource::Tracepoint, EventSource::RawSyscall}));
  EXPECT_EQ(injected, (std::vector<EventSource>{EventSource::Synthetic, EventSource::Marker}));
  EXPECT_EQ(registers, (std::vector<EventSource>{EventSource::Probe}));
  // tracefs gives ftrace's own events (trace_marker's) no enable file.
  EXPECT_EQ(no_enable, (std::vector<EventSource>{EventSource::Marker}));
  EXPECT_EQ(eprobe_targets,
            (std::vector<EventSource>{EventSource::Tracepoint, EventSource::RawSyscall, EventSource::Synthetic}));
  // Only a probe event can be deleted and made again behind histd's back.
  EXPECT_TRUE(source_traits(EventSource::Probe).format_may_change);
  EXPECT_FALSE(source_traits(EventSource::Tracepoint).format_may_change);
}

}  // namespace
}  // namespace histd::catalog
