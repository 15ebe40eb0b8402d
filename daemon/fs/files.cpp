// SPDX-License-Identifier: GPL-2.0-only
#include "fs/files.h"

#include <fmt/format.h>

#include <time.h>

#include <cstdio>
#include <vector>

#include "fs/control_value.h"
#include "fs/dynamic_events.h"
#include "fs/enable_files.h"
#include "fs/nodes.h"
#include "fs/trace_options.h"
#include "histd/symbols.h"
#include "histd/text.h"

namespace histd::fs {

namespace {

// The tree's mini-help. Tools that drive tracefs (the kernel's ftrace
// selftests, libtracefs) decide what a tracefs supports by looking for the
// kernel's own phrases in README ("onchange(var)", "snapshot()", ...): the
// features histd has are named here in those words, and only those.
constexpr std::string_view kReadme =
    "histd: the kernel's hist trigger language on eBPF, in a tracefs-shaped tree.\n\n"
    "  events/<system>/<event>/trigger  write trigger commands here (hist, enable_hist, disable_hist)\n"
    "  events/<system>/<event>/hist     the event's histograms (hist.json: the same as JSON)\n"
    "  events/<system>/<event>/filter   If set, only events passing filter are traced\n"
    "  error_log                        rejected commands, with a caret at the fault\n"
    "  synthetic_events                 define and remove synthetic events\n"
    "  uprobe_events, kprobe_events     the kernel's probe events, where it has them (root);\n"
    "                                   hist triggers and enable on them\n"
    "           p[:[<group>/][<event>]] <place> [<args>]\n"
    "           r[:[<group>/][<event>]] <place> [<args>]\n"
    "           -:[<group>/][<event>]\n"
    "  dynamic_events                   synthetic events, the kernel's probe events and histd's\n"
    "                                   eprobes on tracepoints and synthetic events (probes: root):\n"
    "           s:[synthetic/]<event> <field> [<field>]\n"
    "           p|r...: as in uprobe_events, kprobe_events\n"
    "           e[:[<group>/][<event>]] <attached-group>.<attached-event> [<args>]\n"
    "           -:[<group>/]<event>\n"
    "  trace, trace_pipe                traced synthetic events and trace_marker text\n"
    "  per_cpu/cpuN/                    a CPU's trace, trace_pipe and stats; trace_pipe_raw: its\n"
    "                                   recorded events as the kernel's ring-buffer pages\n"
    "  trace_marker                     text written here is an ftrace:print event\n"
    "  snapshot                         the trace buffer as the last snapshot() action left it\n"
    "  tracing_on                       0: trace records nothing (trace_marker fails); 1: again\n"
    "  current_tracer                   nop, the only tracer (available_tracers)\n"
    "  buffer_size_kb                   each CPU's buffer in KiB (buffer_total_size_kb: all)\n"
    "  trace_clock                      mono, the clock BPF stamps records with: the only one\n"
    "  set_event_pid                    only trace events of the listed pids (and, with\n"
    "                                   options/event-fork, their children)\n"
    "  trace_options, options/          stacktrace, event-fork switch; the others are fixed\n"
    "  saved_cmdlines                   the comms of the recorded tasks (saved_cmdlines_size)\n"
    "  instances                        Make sub-buffers with: mkdir instances/foo\n"
    "                                   Remove sub-buffer with rmdir\n\n"
    "  hist trigger:\n"
    "    Format: hist:keys=<field1[,field2,...]>\n"
    "            [:<var1>=<field|var_ref|numeric_literal>[,<var2>=...]]\n"
    "            [:values=<field1[,field2,...]>]\n"
    "            [:sort=<field1[,field2,...]>]\n"
    "            [:size=#entries]\n"
    "            [:pause][:continue][:clear]\n"
    "            [:name=histname1]\n"
    "            [:nohitcount]\n"
    "            [:<handler>.<action>]\n"
    "            [if <filter>]\n\n"
    "    Keys can be any field, or the special string 'common_stacktrace';\n"
    "    common_timestamp, common_cpu and common_comm are fields of every event.\n"
    "    Variables are read elsewhere as $name (or $system.event.name); expressions\n"
    "    take +, -, * and / over fields, variables and numeric literals.\n"
    "    Modifiers: .hex .sym .sym-offset .execname .syscall .log2 .buckets=size\n"
    "               .usecs .percent .graph .stacktrace\n\n"
    "    Handlers:\n"
    "        onmatch(matching.event)  - on each addition or update\n"
    "        onmax(var)               - when var exceeds its maximum\n"
    "        onchange(var)            - when var changes\n"
    "    Actions:\n"
    "        trace(<synthetic_event>,param list)  - generate the synthetic event\n"
    "        save(field,...)                      - save the event's fields\n"
    "        snapshot()                           - snapshot the trace buffer\n\n"
    "  enable_hist:<system>:<event>[:count] [if <filter>]\n"
    "  disable_hist:<system>:<event>[:count] [if <filter>]\n\n"
    "  synthetic events:\n"
    "     example: echo 'myevent u64 lat; char name[]; long[] stack' >> synthetic_events\n";

int size_of(std::string_view data) { return static_cast<int>(data.size()); }
// A command's result as a write's: the bytes taken, or its errno.
int taken(const engine::CommandResult& r, std::string_view data) { return r ? size_of(data) : -r.error().error.err; }
int done(const engine::CommandResult& r) { return r ? 0 : -r.error().error.err; }
int shown(std::string& out, std::string text) {
  out = std::move(text);
  return 0;
}
std::string flag(bool on) { return on ? "1\n" : "0\n"; }
// A mask of the first `cpus` CPUs as the kernel's %*pb prints it: hex,
// 32 bits a group, groups separated by commas, the highest first.
std::string cpu_mask_text(uint32_t cpus) {
  std::string out;
  for (uint32_t group = (std::max(cpus, 1u) - 1) / 32 + 1; group-- > 0;) {
    const uint32_t bits = std::min(32u, cpus - std::min(cpus, group * 32));
    const uint32_t word = bits == 32 ? 0xffffffffu : (1u << bits) - 1;
    out += out.empty() ? fmt::format("{:x}", word) : fmt::format(",{:08x}", word);
  }
  return out;
}

// The comm of the task writing to trace_marker.
std::string comm_of(pid_t pid) {
  std::string comm;
  if (FILE* f = std::fopen(fmt::format("/proc/{}/comm", pid).c_str(), "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof(buf), f)) comm = buf;
    std::fclose(f);
  }
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

// --- the root's files

int read_readme(const FileCall&, std::string& out) { return shown(out, std::string(kReadme)); }
int read_available_events(const FileCall& c, std::string& out) { return shown(out, c.ns.available_events()); }
int read_error_log(const FileCall& c, std::string& out) {
  return shown(out, render::error_log(c.engine.reads().error_log()));
}
// As tracefs: what is written to error_log or trace is ignored; opening
// with O_TRUNC clears, so `echo junk >> error_log` keeps the log.
int write_ignored(const FileCall&, std::string_view data) { return size_of(data); }
int clear_error_log(const FileCall& c) {
  c.engine.clear_error_log();
  return 0;
}
int read_synthetic(const FileCall& c, std::string& out) {
  return shown(out, render::synthetic_events(c.engine.reads().synthetic_events()));
}
int write_synthetic(const FileCall& c, std::string_view data) { return taken(c.engine.write_synthetic(data), data); }
int truncate_synthetic(const FileCall& c) { return done(c.engine.truncate_synthetic()); }
int read_trace(const FileCall& c, std::string& out) {
  return shown(out, c.engine.trace_ring().read_trace(c.options.hide_kernel_addresses));
}
// per_cpu/cpuN/: that CPU's part of trace, and its ring buffer's counts.
int read_cpu_trace(const FileCall& c, std::string& out) {
  return shown(out, c.engine.trace_ring().read_trace_cpu(uint32_t(c.node.cpu), c.options.hide_kernel_addresses));
}
// The kernel's tracing_stats_read(): seconds.microseconds of its clock
// (histd's: CLOCK_MONOTONIC, what its events are stamped with).
std::string seconds(uint64_t ns) {
  const uint64_t us = ns / 1000;
  return fmt::format("{:5}.{:06}", us / 1000000, us % 1000000);
}
int read_cpu_stats(const FileCall& c, std::string& out) {
  const trace::RawStats s = c.engine.trace_ring().raw_stats(uint32_t(c.node.cpu));
  struct timespec now {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t now_ns = uint64_t(now.tv_sec) * 1000000000ULL + uint64_t(now.tv_nsec);
  return shown(out,
               fmt::format("entries: {}\noverrun: {}\ncommit overrun: 0\nbytes: {}\noldest event ts: {}\n"
                           "now ts: {}\ndropped events: {}\nread events: {}\n",
                           s.entries, s.overrun, s.bytes, seconds(s.oldest_ts), seconds(now_ns), s.dropped, s.read));
}
int clear_trace(const FileCall& c) {
  c.engine.trace_ring().clear_trace();
  return 0;
}
int write_marker(const FileCall& c, std::string_view data) {
  const pid_t host = c.host_pids ? c.host_pids->host_pid(c.pid) : c.pid;
  return taken(c.engine.write_marker(data, host, comm_of(c.pid)), data);
}
int read_snapshot(const FileCall& c, std::string& out) {
  return shown(out, c.engine.trace_ring().read_snapshot(c.options.hide_kernel_addresses));
}
// As tracefs: 0 frees it, 1 takes a snapshot, any other number clears it.
int write_snapshot(const FileCall& c, std::string_view data) {
  auto v = parse_control_number(data);
  if (!v) return -v.error();
  c.engine.trace_ring().write_snapshot(*v);
  return size_of(data);
}
int read_tracing_on(const FileCall& c, std::string& out) {
  return shown(out, flag(c.engine.trace_ring().tracing_on()));
}
// As rb_simple_write(): any number, non-zero for on.
int write_tracing_on(const FileCall& c, std::string_view data) {
  auto v = parse_control_number(data);
  if (!v) return -v.error();
  c.engine.trace_ring().set_tracing_on(*v != 0);
  return size_of(data);
}
// histd traces events, not functions: the kernel's nop tracer is the one it has.
int read_tracers(const FileCall&, std::string& out) { return shown(out, "nop\n"); }
// As tracing_set_trace_write(): the name without surrounding blanks; a
// tracer histd does not have is EINVAL.
int write_current_tracer(const FileCall&, std::string_view data) {
  return trim(data) == "nop" ? size_of(data) : -EINVAL;
}
int read_dynamic_events(const FileCall& c, std::string& out) { return shown(out, dynamic_events_text(c.engine)); }
int write_dynamic(const FileCall& c, std::string_view data) {
  const int rc = write_dynamic_events(c.engine, data, c.uid == 0);
  return rc < 0 ? rc : size_of(data);
}
int truncate_dynamic(const FileCall& c) { return truncate_dynamic_events(c.engine, c.uid == 0); }
int read_set_event(const FileCall& c, std::string& out) { return shown(out, set_event_text(c.engine)); }
int write_set(const FileCall& c, std::string_view data) {
  const int rc = write_set_event(c.ns, c.node, data);
  return rc < 0 ? rc : size_of(data);
}
int clear_set(const FileCall& c) { return clear_set_event(c.ns, c.node); }
// set_event_pid: the listed pids, one a line from the lowest; a write adds
// to them (all or nothing), an open with O_TRUNC empties it (the kernel's
// ftrace_event_set_pid_open() and ftrace_event_pid_write()).
int read_event_pid(const FileCall& c, std::string& out) {
  std::string text;
  for (uint32_t pid : c.engine.event_pids()) text += fmt::format("{}\n", pid);
  return shown(out, std::move(text));
}
int write_event_pid(const FileCall& c, std::string_view data) {
  auto pids = parse_pid_list(data);
  if (!pids) return -pids.error();
  return taken(c.engine.add_event_pids(*pids), data);
}
int clear_event_pid(const FileCall& c) { return done(c.engine.clear_event_pids()); }
bool has_probe_file(const Namespace& ns, const Node&, std::string_view name) { return ns.has_probe_file(name); }
int read_probes(const FileCall& c, std::string& out) { return shown(out, c.engine.reads().probe_events(c.node.file)); }
int write_probes(const FileCall& c, std::string_view data) {
  return taken(c.engine.write_probe_events(c.node.file, data, false), data);
}
int truncate_probes(const FileCall& c) { return done(c.engine.write_probe_events(c.node.file, "", true)); }

// --- an event's files

int read_format(const FileCall& c, std::string& out) {
  auto format = c.engine.catalog().event(c.node.system, c.node.event);
  if (!format) return -format.error().err;
  return shown(out, (*format)->text);
}
int read_id(const FileCall& c, std::string& out) {
  auto format = c.engine.catalog().event(c.node.system, c.node.event);
  if (!format) return -format.error().err;
  return shown(out, fmt::format("{}\n", (*format)->id));
}
// The hist files' texts (Opening::Hist: made once for every reader).
template <Expected<std::string> (*Render)(engine::Engine&, const Node&, const render::Options&)>
int read_hist(const FileCall& c, std::string& out) {
  auto text = Render(c.engine, c.node, c.options);
  if (!text) return -text.error().err;
  return shown(out, std::move(*text));
}
// The kernel's hist_debug prints the hist_data pointer; histd's prints the
// table map's id there, so it holds no kernel address to hide.
int read_hist_debug(const FileCall& c, std::string& out) {
  return shown(out, render::hist_debug(c.engine.reads().hist_debug(c.node.system, c.node.event)));
}
int read_trigger(const FileCall& c, std::string& out) {
  return shown(out, render::trigger_file(c.engine.reads().event_triggers(c.node.system, c.node.event)));
}
int write_trigger(const FileCall& c, std::string_view data) {
  // As tracefs: one write(2) is one command, and a page is the most it takes.
  if (data.size() >= 4096) return -EINVAL;
  auto r = c.engine.write_trigger(c.node.system, c.node.event, data, symbols::may_see_kernel_addresses(c.uid, c.pid));
  // The writer gets an errno and error_log one line: the whole story (a
  // verifier log, the compiler's output) goes to histd's log.
  if (!r && !r.error().diagnostic)
    fmt::print(stderr, "histd: {}:{}: {}\n", c.node.system, c.node.event, r.error().message());
  return taken(r, data);
}
int truncate_triggers(const FileCall& c) { return done(c.engine.truncate_triggers(c.node.system, c.node.event)); }
// An event's filter file and its system's (the kernel's event_filter_write()
// and subsystem_filter_write(): a page at most; a system's shows only its
// fixed message).
int read_filter(const FileCall& c, std::string& out) {
  if (c.node.event.empty())
    return shown(out,
                 "### global filter ###\n"
                 "# Use this to set filters for multiple events.\n"
                 "# Only events with the given fields will be affected.\n"
                 "# If no events are modified, an error message will be displayed here\n");
  return shown(out, c.engine.reads().filter(c.node.system, c.node.event).value_or("none") + "\n");
}
int write_filter(const FileCall& c, std::string_view data) {
  if (data.size() >= 4096) return -EINVAL;
  if (c.node.event.empty()) return taken(c.engine.set_system_filter(c.node.system, data), data);
  return taken(c.engine.set_filter(c.node.system, c.node.event, data), data);
}

// --- enable files, events/ and options/

int read_enable(const FileCall& c, std::string& out) { return shown(out, enable_state(c.ns, c.node)); }
int write_enable_file(const FileCall& c, std::string_view data) {
  auto v = parse_enable(data);
  if (!v) return -v.error();
  const int rc = write_enable(c.ns, c.node, *v);
  return rc < 0 ? rc : size_of(data);
}
// ftrace's own events (trace_marker's ftrace:print) are always recorded:
// tracefs gives them no enable file (TRACE_EVENT_FL_IGNORE_ENABLE).
// events/enable, and a system's and an event's where its events have one
// (events/ftrace/ has none, as in tracefs).
bool has_enable_file(const Namespace&, const Node& dir, std::string_view) {
  return dir.system.empty() || catalog::source_traits(catalog::event_source(dir.system)).has_enable_file;
}
// The kernel's ring buffer page and event header: clients that parse event
// formats (libtracefs's tracefs_local_events()) read them first.
bool has_header(const Namespace& ns, const Node&, std::string_view name) { return ns.header(name) != nullptr; }
int read_header(const FileCall& c, std::string& out) { return shown(out, *c.ns.header(c.node.file)); }
bool in_top_tree(const Namespace&, const Node& dir, std::string_view) { return dir.instance.empty(); }
// options/<name>, a file per trace option (trace_options.h).
int read_option(const FileCall& c, std::string& out) {
  const TraceOption* option = find_trace_option(c.node.file);
  if (!option) return -ENOENT;
  return shown(out, flag(option_value(c.engine, *option, !c.node.instance.empty())));
}
int write_option(const FileCall& c, std::string_view data) {
  const TraceOption* option = find_trace_option(c.node.file);
  if (!option) return -ENOENT;
  auto v = parse_enable(data);
  if (!v) return -v.error();
  const int rc = set_option(c.engine, *option, *v, !c.node.instance.empty());
  if (rc < 0 && !option->set) fmt::print(stderr, "histd: options/{}: fixed in histd\n", option->name);
  return rc < 0 ? rc : size_of(data);
}
int read_trace_options(const FileCall& c, std::string& out) {
  return shown(out, trace_options_text(c.engine, !c.node.instance.empty()));
}
int write_options(const FileCall& c, std::string_view data) {
  const int rc = write_trace_options(c.engine, data, !c.node.instance.empty());
  return rc < 0 ? rc : size_of(data);
}

// --- the clock, the CPUs, the formats: what histd records with

// histd's records are stamped by BPF's bpf_ktime_get_ns(), CLOCK_MONOTONIC:
// the kernel's "mono" clock is the one histd can honour.
int read_trace_clock(const FileCall&, std::string& out) { return shown(out, "[mono]\n"); }
int write_trace_clock(const FileCall&, std::string_view data) {
  if (trim(data) == "mono") return size_of(data);
  fmt::print(stderr, "histd: trace_clock: histd's records are stamped by the monotonic clock (mono) only\n");
  return -EINVAL;
}
// Timestamps are deltas in the raw ring buffer's pages (per_cpu/), as the kernel's default.
int read_timestamp_mode(const FileCall&, std::string& out) { return shown(out, "[delta] absolute\n"); }
// Every CPU is recorded: the mask of the possible ones, as the kernel's %*pb.
int read_cpumask(const FileCall& c, std::string& out) {
  return shown(out, cpu_mask_text(c.engine.trace_ring().possible_cpus()) + "\n");
}
int write_cpumask(const FileCall& c, std::string_view data) {
  if (trim(data) == cpu_mask_text(c.engine.trace_ring().possible_cpus())) return size_of(data);
  fmt::print(stderr, "histd: tracing_cpumask: histd records on every CPU\n");
  return -EINVAL;
}
// The recorded tasks' comms, as the kernel's saved_cmdlines; their tgids
// are not recorded (options/record-tgid is 0), so saved_tgids is empty.
int read_cmdlines(const FileCall& c, std::string& out) { return shown(out, c.engine.trace_ring().cmdlines().text()); }
int read_cmdlines_size(const FileCall& c, std::string& out) {
  return shown(out, fmt::format("{}\n", c.engine.trace_ring().cmdlines().size()));
}
int write_cmdlines_size(const FileCall& c, std::string_view data) {
  auto v = parse_control_number(data);
  if (!v) return -v.error();
  return c.engine.trace_ring().cmdlines().resize(*v) ? size_of(data) : -EINVAL;
}
int read_tgids(const FileCall&, std::string& out) { return shown(out, ""); }
// Each CPU's buffer in KiB, and all of them (the kernel's
// tracing_entries_read() and tracing_total_entries_read()).
int read_buffer_kb(const FileCall& c, std::string& out) {
  return shown(out, fmt::format("{}\n", c.engine.trace_ring().buffer_size_kb()));
}
int write_buffer_kb(const FileCall& c, std::string_view data) {
  auto v = parse_control_number(data);
  if (!v) return -v.error();
  auto st = c.engine.trace_ring().set_buffer_size_kb(*v);
  return st ? size_of(data) : -st.error().err;
}
int read_total_kb(const FileCall& c, std::string& out) {
  const auto& ring = c.engine.trace_ring();
  return shown(out, fmt::format("{}\n", ring.buffer_size_kb() * ring.possible_cpus()));
}
// histd records no trace_printk() (bprint) events: no formats to resolve.
int read_printk_formats(const FileCall&, std::string& out) { return shown(out, ""); }

using enum Access;
using enum Opening;
constexpr unsigned kTop = kTopRoot, kBoth = kRoots;
// clang-format off
constexpr TreeFile kFiles[] = {
  // name                places       access      opening  read                   write                  truncate
  {"README",            kTop,        ReadOnly,   Content, read_readme},
  {"available_events",  kTop,        ReadOnly,   Content, read_available_events},
  {"error_log",         kBoth,       ReadWrite,  Content, read_error_log,        write_ignored,         clear_error_log},
  {"synthetic_events",  kTop,        ReadWrite,  Content, read_synthetic,        write_synthetic,       truncate_synthetic,
   false, true},
  {"trace",             kBoth,       ReadWrite,  Content, read_trace,            write_ignored,         clear_trace},
  {"trace_pipe",        kBoth,       ReadOnly,   Pipe},
  {"trace_marker",      kBoth,       ReadWrite,  Content, nullptr,               write_marker},
  {"snapshot",          kBoth,       ReadWrite,  Content, read_snapshot,         write_snapshot},
  {"tracing_on",        kBoth,       ReadWrite,  Content, read_tracing_on,       write_tracing_on},
  {"current_tracer",    kBoth,       ReadWrite,  Content, read_tracers,          write_current_tracer},
  {"available_tracers", kBoth,       ReadOnly,   Content, read_tracers},
  {"dynamic_events",    kTop,        ReadWrite,  Content, read_dynamic_events,   write_dynamic,         truncate_dynamic,
   false, true},
  {"set_event",         kBoth,       ReadWrite,  Content, read_set_event,        write_set,             clear_set},
  {"set_event_pid",     kBoth,       ReadWrite,  Content, read_event_pid,        write_event_pid,       clear_event_pid},
  {"kprobe_events",     kTop,        RootWrites, Content, read_probes,           write_probes,          truncate_probes,
   false, false, has_probe_file},
  {"uprobe_events",     kTop,        RootWrites, Content, read_probes,           write_probes,          truncate_probes,
   false, false, has_probe_file},
  {"format",            kEventDir,   ReadOnly,   Content, read_format},
  {"hist",              kEventDir,   ReadOnly,   Hist,    read_hist<hist_text>,            nullptr,               nullptr, true},
  {"hist.json",         kEventDir,   ReadOnly,   Hist,    read_hist<hist_json>},
  {"hist_debug",        kEventDir,   ReadOnly,   Content, read_hist_debug},
  {"id",                kEventDir,   ReadOnly,   Content, read_id},
  {"trigger",           kEventDir,   ReadWrite,  Content, read_trigger,          write_trigger,         truncate_triggers,
   false, true},
  {"enable",            kEventsDir | kSystemDir | kEventDir,
                                     ReadWrite,  Content, read_enable,           write_enable_file,     nullptr,
   false, false, has_enable_file},
  {"filter",            kSystemDir | kEventDir,
                                     ReadWrite,  Content, read_filter,           write_filter},
  {"header_event",      kEventsDir,  ReadOnly,   Content, read_header,           nullptr,               nullptr,
   false, false, has_header},
  {"header_page",       kEventsDir,  ReadOnly,   Content, read_header,           nullptr,               nullptr,
   false, false, has_header},
  {"trace_options",     kBoth,       ReadWrite,  Content, read_trace_options,    write_options},
  {"trace_clock",       kBoth,       ReadWrite,  Content, read_trace_clock,      write_trace_clock},
  {"timestamp_mode",    kBoth,       ReadOnly,   Content, read_timestamp_mode},
  {"tracing_cpumask",   kBoth,       ReadWrite,  Content, read_cpumask,          write_cpumask},
  {"printk_formats",    kTop,        ReadOnly,   Content, read_printk_formats},
  {"saved_cmdlines",    kTop,        ReadOnly,   Content, read_cmdlines},
  {"saved_cmdlines_size", kTop,      ReadWrite,  Content, read_cmdlines_size,    write_cmdlines_size},
  {"saved_tgids",       kTop,        ReadOnly,   Content, read_tgids},
  {"buffer_size_kb",    kBoth,       ReadWrite,  Content, read_buffer_kb,        write_buffer_kb},
  {"buffer_total_size_kb", kBoth,    ReadOnly,   Content, read_total_kb},
  {"trace",             kCpuDir,     ReadWrite,  Content, read_cpu_trace,        write_ignored},
  {"trace_pipe",        kCpuDir,     ReadOnly,   Pipe},
  {"trace_pipe_raw",    kCpuDir,     ReadOnly,   RawPipe},
  {"stats",             kCpuDir,     ReadOnly,   Content, read_cpu_stats},
};
// clang-format on

}  // namespace

// The rows above, then options/ with a row per trace option.
std::span<const TreeFile> tree_files() {
  static const std::vector<TreeFile> files = [] {
    std::vector<TreeFile> all(std::begin(kFiles), std::end(kFiles));
    for (const TraceOption& o : trace_options())
      all.push_back(TreeFile{o.name, kOptionsDir, Access::ReadWrite, Opening::Content, read_option, write_option,
                             nullptr, false, false, o.top_only ? in_top_tree : nullptr});
    return all;
  }();
  return files;
}

const TreeFile* find_file(const Namespace& ns, const Node& dir, Place place, std::string_view name) {
  for (const TreeFile& f : tree_files())
    if (f.name == name && (f.places & place) != 0 && (!f.present || f.present(ns, dir, name))) return &f;
  return nullptr;
}

}  // namespace histd::fs
