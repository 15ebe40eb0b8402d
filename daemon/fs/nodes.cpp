// SPDX-License-Identifier: GPL-2.0-only
#include "fs/nodes.h"

#include "fs/dynamic_events.h"
#include "fs/enable_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

namespace histd::fs {

namespace {

constexpr const char* kEventFiles[] = {"format", "hist", "hist.json", "hist_debug", "id", "trigger"};
constexpr const char* kRootFiles[] = {"README",     "available_events", "error_log",      "synthetic_events",
                                     "trace",      "trace_pipe",       "trace_marker",   "snapshot",
                                     "tracing_on", "current_tracer",   "available_tracers", "dynamic_events",
                                     "set_event"};
// An instance's files, as tracefs gives each instance its own (the
// definitions of events, and README, are the top tree's only).
constexpr const char* kInstanceFiles[] = {"error_log",  "trace",          "trace_pipe",        "trace_marker",
                                          "snapshot",   "tracing_on",     "current_tracer",    "available_tracers",
                                          "set_event"};
using catalog::kSynthSystem;

std::span<const char* const> root_files(bool top) {
  if (top) return kRootFiles;
  return kInstanceFiles;
}

// The synthetic system's directory holds histd's own events, and their
// `enable` files.
bool is_synthetic(std::string_view system) {
  return catalog::event_source(system) == catalog::EventSource::Synthetic;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_probe_file(std::string_view file) { return file == "kprobe_events" || file == "uprobe_events"; }

// ftrace's own events (trace_marker's ftrace:print) are always recorded:
// tracefs gives them no enable file (TRACE_EVENT_FL_IGNORE_ENABLE).
bool has_enable_file(const Node& event) { return catalog::event_source(event.system) != catalog::EventSource::Marker; }

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '/') {
      if (!cur.empty()) parts.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(std::move(cur));
  return parts;
}

// The tree's mini-help. Tools that drive tracefs (the kernel's ftrace
// selftests, libtracefs) decide what a tracefs supports by looking for the
// kernel's own phrases in README ("onchange(var)", "snapshot()", ...): the
// features histd has are named here in those words, and only those.
std::string readme() {
  return "histd: the kernel's hist trigger language on eBPF, in a tracefs-shaped tree.\n\n"
         "  events/<system>/<event>/trigger  write trigger commands here (hist, enable_hist, disable_hist)\n"
         "  events/<system>/<event>/hist     the event's histograms (hist.json: the same as JSON)\n"
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
         "  trace_marker                     text written here is an ftrace:print event\n"
         "  snapshot                         the trace buffer as the last snapshot() action left it\n"
         "  tracing_on                       0: trace records nothing (trace_marker fails); 1: again\n"
         "  current_tracer                   nop, the only tracer (available_tracers)\n"
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
}

}  // namespace

bool writable(const Node& n) {
  return n.file == "trigger" || n.file == "error_log" || n.file == "synthetic_events" || n.file == "trace" ||
         n.file == "trace_marker" || n.file == "enable" || n.file == "snapshot" || n.file == "tracing_on" ||
         n.file == "current_tracer" || n.file == "dynamic_events" || n.file == "set_event" ||
         n.file == "options/stacktrace" || is_probe_file(n.file);
}

mode_t node_mode(const Node& n, gid_t group) {
  // instances/ takes mkdir and rmdir from those who may write.
  if (n.kind == Node::Kind::InstancesDir) return S_IFDIR | (group ? 0770 : 0700);
  if (n.is_dir()) return S_IFDIR | (group ? 0750 : 0700);
  // A probe reads any kernel or process memory: only root defines them, as
  // in tracefs.
  if (is_probe_file(n.file)) return S_IFREG | 0600 | (group ? 0040 : 0);
  const mode_t owner = writable(n) ? 0600 : 0400;
  return S_IFREG | owner | (group ? owner >> 3 : 0);
}

Namespace::Namespace(engine::Engine& engine, instances::Instances* instances)
    : engine_(&engine), instances_(instances) {
  for (const catalog::EventId& id : engine.catalog().events()) systems_[id.system].insert(id.name);
  // Probe events come and go, in any system their creator names: the
  // kernel's dynamic_events lists them ("p:GROUP/NAME ..."), without
  // reading every event's format. No list: nothing is fixed.
  const std::filesystem::path dynamic = engine.catalog().root() / "dynamic_events";
  if (std::filesystem::exists(dynamic)) {
    std::set<std::string> come_and_go{std::string(catalog::kSynthSystem)};
    std::istringstream lines(read_text(dynamic));
    for (std::string line; std::getline(lines, line);) {
      const size_t colon = line.find(':'), slash = line.find('/');
      if (colon != std::string::npos && slash != std::string::npos && colon < slash)
        come_and_go.insert(line.substr(colon + 1, slash - colon - 1));
    }
    for (const auto& [system, events] : systems_)
      if (!come_and_go.contains(system)) fixed_systems_.insert(system);
  }
  for (const char* name : {"header_page", "header_event"}) {
    std::string text = read_text(engine.catalog().root() / "events" / name);
    if (!text.empty()) headers_[name] = std::move(text);
  }
  // The kernel's probe event files histd writes through to: those this
  // kernel has.
  for (const char* name : {"kprobe_events", "uprobe_events"})
    if (std::filesystem::exists(engine.catalog().root() / name)) probe_files_.emplace_back(name);
}

std::shared_ptr<engine::Engine> Namespace::engine(const std::string& instance) const {
  // The top engine outlives the tree: shared without being owned.
  if (instance.empty()) return std::shared_ptr<engine::Engine>(std::shared_ptr<void>(), engine_);
  return instances_ ? instances_->find(instance) : nullptr;
}

Node Namespace::resolve(std::string_view path) const {
  const auto parts = split_path(path);
  if (parts.empty() || parts[0] != "instances" || !instances_) return resolve_in(parts, 0, Node{});
  Node n;
  if (parts.size() == 1) {
    n.kind = Node::Kind::InstancesDir;
    return n;
  }
  n.instance = parts[1];  // resolve_in finds no engine for an instance that is not there
  return resolve_in(parts, 2, std::move(n));
}

// `parts` from `first` on, under the top tree or the instance `n` names.
Node Namespace::resolve_in(const std::vector<std::string>& all, size_t first, Node n) const {
  const std::vector<std::string> parts(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
  const auto eng = engine(n.instance);
  if (!eng) return Node{};
  const bool top = n.instance.empty();
  if (parts.empty()) {
    n.kind = Node::Kind::Root;
    return n;
  }
  if (parts.size() == 2 && parts[0] == "events" &&
      (parts[1] == "enable" || headers_.count(parts[1]))) {
    n.kind = Node::Kind::File;
    n.file = parts[1];
    return n;
  }
  if (parts[0] == "options" && parts.size() <= 2) {
    // The trace options histd has: stacktrace.
    if (parts.size() == 1) n.kind = Node::Kind::OptionsDir;
    if (parts.size() == 2 && parts[1] == "stacktrace") {
      n.kind = Node::Kind::File;
      n.file = "options/stacktrace";
    }
    return n;
  }
  if (parts.size() == 1) {
    if (parts[0] == "events") {
      n.kind = Node::Kind::EventsDir;
      return n;
    }
    for (const char* f : root_files(top))
      if (parts[0] == f) {
        n.kind = Node::Kind::File;
        n.file = f;
      }
    for (const std::string& f : probe_files_)
      if (top && parts[0] == f) {
        n.kind = Node::Kind::File;
        n.file = f;
      }
    return n;
  }
  if (parts[0] != "events" || parts.size() > 4) return n;
  if (!has_system(*eng, parts[1])) return n;
  n.system = parts[1];
  if (parts.size() == 2) {
    n.kind = Node::Kind::SystemDir;
    return n;
  }
  if (parts.size() == 3 && parts[2] == "enable") {
    n.kind = Node::Kind::File;
    n.file = "enable";
    return n;
  }
  if (!has_event(*eng, parts[1], parts[2])) return n;
  n.event = parts[2];
  if (parts.size() == 3) {
    n.kind = Node::Kind::EventDir;
    return n;
  }
  for (const char* f : kEventFiles)
    if (parts[3] == f) {
      n.kind = Node::Kind::File;
      n.file = f;
    }
  if (parts[3] == "enable" && has_enable_file(n)) {
    n.kind = Node::Kind::File;
    n.file = "enable";
  }
  return n;
}

std::vector<std::string> Namespace::list(const Node& dir) const {
  std::vector<std::string> out;
  const auto eng = engine(dir.instance);
  if (!eng) return out;
  switch (dir.kind) {
    case Node::Kind::Root:
      for (const char* f : root_files(dir.instance.empty())) out.emplace_back(f);
      if (dir.instance.empty())
        for (const std::string& f : probe_files_) out.push_back(f);
      out.emplace_back("events");
      out.emplace_back("options");
      if (dir.instance.empty() && instances_) out.emplace_back("instances");
      break;
    case Node::Kind::InstancesDir:
      if (instances_) out = instances_->names();
      break;
    case Node::Kind::OptionsDir:
      out.emplace_back("stacktrace");
      break;
    case Node::Kind::EventsDir: {
      const std::set<std::string> names = systems(*eng);
      out.assign(names.begin(), names.end());
      out.emplace_back("enable");
      for (const auto& [name, text] : headers_) out.push_back(name);
      break;
    }
    case Node::Kind::SystemDir: {
      const auto events = events_of(*eng, dir.system);
      out.assign(events.begin(), events.end());
      out.emplace_back("enable");
      break;
    }
    case Node::Kind::EventDir:
      for (const char* f : kEventFiles) out.emplace_back(f);
      if (has_enable_file(dir)) out.emplace_back("enable");
      break;
    case Node::Kind::None:
    case Node::Kind::File:
      break;
  }
  return out;
}

std::set<std::string> Namespace::systems(engine::Engine& engine) const {
  std::set<std::string> names;
  for (const auto& [sys, events] : systems_) names.insert(sys);
  for (std::string& sys : engine.catalog().live_systems()) names.insert(std::move(sys));
  for (const catalog::EventId& id : engine.catalog().dynamic_events()) names.insert(id.system);
  if (has_system(engine, kSynthSystem)) names.insert(kSynthSystem);
  return names;
}

// An event that still has triggers stays reachable, so that they can be
// read and removed.
bool Namespace::fixed(const Node& n) const {
  // Not the root: a stat of the mount point must reach histd, so that a
  // dead histd's tree reads as dead (ENOTCONN, daemon::Instance detaches it).
  if (!n.instance.empty() || n.kind == Node::Kind::None || n.kind == Node::Kind::Root ||
      n.kind == Node::Kind::InstancesDir)
    return false;
  if (n.system.empty()) return true;  // the root's files, events/, events/enable, options/
  if (!fixed_systems_.contains(n.system)) return false;
  if (n.event.empty()) return true;  // the system's directory and its enable
  return systems_.at(n.system).contains(n.event);
}

bool Namespace::has_system(engine::Engine& engine, const std::string& system) const {
  if (is_synthetic(system)) return !engine.synthetic_names().empty();
  if (systems_.count(system) > 0) return true;
  for (const catalog::EventId& id : engine.catalog().dynamic_events())
    if (id.system == system) return true;
  const auto live = engine.catalog().live_systems();
  return std::find(live.begin(), live.end(), system) != live.end() || !engine_events_of(engine, system).empty();
}

bool Namespace::has_event(engine::Engine& engine, const std::string& system, const std::string& event) const {
  if (is_synthetic(system)) return engine.catalog().contains(system, event);
  auto sys = systems_.find(system);
  if (sys != systems_.end() && sys->second.count(event) > 0) return true;
  return engine.catalog().contains(system, event) || engine_events_of(engine, system).count(event) > 0;
}

std::set<std::string> Namespace::events_of(engine::Engine& engine, const std::string& system) const {
  if (is_synthetic(system)) {
    auto names = engine.synthetic_names();
    return std::set<std::string>(names.begin(), names.end());
  }
  auto sys = systems_.find(system);
  std::set<std::string> out = sys == systems_.end() ? std::set<std::string>() : sys->second;
  for (std::string& ev : engine.catalog().live_events(system)) out.insert(std::move(ev));
  for (const catalog::EventId& id : engine.catalog().dynamic_events())
    if (id.system == system) out.insert(id.name);
  out.merge(engine_events_of(engine, system));
  return out;
}

// Events of `system` that have triggers in the engine.
std::set<std::string> Namespace::engine_events_of(engine::Engine& engine, const std::string& system) const {
  std::set<std::string> out;
  for (const engine::TriggerInfo& t : engine.trigger_lines())
    if (t.system == system && !t.event.empty()) out.insert(t.event);
  return out;
}

std::string Namespace::available_events() const {
  std::set<std::pair<std::string, std::string>> all;
  for (const auto& [sys, events] : systems_)
    for (const auto& ev : events) all.emplace(sys, ev);
  for (const catalog::EventId& id : engine_->catalog().discovered_events()) all.emplace(id.system, id.name);
  for (const catalog::EventId& id : engine_->catalog().dynamic_events())
    if (id.system != kSynthSystem) all.emplace(id.system, id.name);
  std::string out;
  for (const auto& [sys, ev] : all) out += sys + ":" + ev + "\n";
  for (const std::string& ev : engine_->synthetic_names()) out += std::string(kSynthSystem) + ":" + ev + "\n";
  return out;
}

int Namespace::generate(const Node& n, const render::Options& options, std::string& out) const {
  const std::shared_ptr<engine::Engine> held = this->engine(n);
  if (!held) return -ENOENT;  // its instance was removed
  engine::Engine& engine = *held;
  if (n.file == "enable") {
    out = enable_state(*this, n);
    return 0;
  }
  if (auto header = headers_.find(n.file); header != headers_.end()) {
    // The kernel's ring buffer page and event header: clients that parse
    // event formats (libtracefs's tracefs_local_events()) read them first.
    out = header->second;
    return 0;
  }
  if (n.system.empty()) {
    if (n.file == "README") out = readme();
    else if (n.file == "available_events") out = available_events();
    else if (n.file == "error_log") out = render::error_log(engine.error_log());
    else if (n.file == "synthetic_events") out = render::synthetic_events(engine.synthetic_events());
    else if (n.file == "trace") out = engine.read_trace(options.hide_kernel_addresses);
    else if (n.file == "snapshot") out = engine.read_snapshot(options.hide_kernel_addresses);
    else if (n.file == "dynamic_events") out = dynamic_events_text(engine);
    else if (is_probe_file(n.file)) out = engine.probe_events(n.file);
    else if (n.file == "tracing_on") out = engine.tracing_on() ? "1\n" : "0\n";
    else if (n.file == "set_event") out = set_event_text(engine);
    else if (n.file == "options/stacktrace") out = engine.stacktrace_option() ? "1\n" : "0\n";
    // histd traces events, not functions: the kernel's nop tracer is the one it has.
    else if (n.file == "current_tracer" || n.file == "available_tracers") out = "nop\n";
    return 0;
  }

  if (n.file == "trigger") {
    out = render::trigger_file(engine.event_triggers(n.system, n.event));
    return 0;
  }
  if (n.file == "hist" || n.file == "hist.json") {
    auto text = hist_file(engine, n, options);
    if (!text) return -text.error().err;
    out = std::move(*text);
    return 0;
  }
  if (n.file == "hist_debug") {
    // The kernel's hist_debug prints the hist_data pointer; histd's prints
    // the table map's id there, so it holds no kernel address to hide.
    out = render::hist_debug(engine.hist_debug(n.system, n.event));
    return 0;
  }
  auto format = engine.catalog().event(n.system, n.event);
  if (!format) return -format.error().err;
  out = n.file == "format" ? (*format)->text : fmt::format("{}\n", (*format)->id);
  return 0;
}

Expected<std::string> hist_file(engine::Engine& engine, const Node& n, const render::Options& options) {
  auto hist = engine.hist(n.system, n.event);
  if (!hist) return unexpected(std::move(hist).error());
  return n.file == "hist.json" ? render::hist_json(*hist, engine.resolver(), options)
                               : render::hist_text(*hist, engine.resolver(), options);
}

}  // namespace histd::fs
