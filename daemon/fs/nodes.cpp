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

using catalog::kSynthSystem;

// The synthetic system's directory holds histd's own events, and their
// `enable` files.
bool is_synthetic(std::string_view system) { return catalog::event_source(system) == catalog::EventSource::Synthetic; }

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

}  // namespace

mode_t node_mode(const Node& n, gid_t group) {
  // instances/ takes mkdir and rmdir from those who may write.
  if (n.kind == Node::Kind::InstancesDir) return S_IFDIR | (group ? 0770 : 0700);
  if (n.is_dir()) return S_IFDIR | (group ? 0750 : 0700);
  const Access access = n.row ? n.row->access : Access::ReadOnly;
  if (access == Access::RootWrites) return S_IFREG | 0600 | (group ? 0040 : 0);
  const mode_t owner = access == Access::ReadWrite ? 0600 : 0400;
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

Node Namespace::file_in(Node n, Place place, std::string_view name) const {
  const TreeFile* row = find_file(*this, n, place, name);
  if (!row) return n;
  n.kind = Node::Kind::File;
  n.file = std::string(name);
  n.row = row;
  return n;
}

// `parts` from `first` on, under the top tree or the instance `n` names.
Node Namespace::resolve_in(const std::vector<std::string>& all, size_t first, Node n) const {
  const std::vector<std::string> parts(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
  const auto eng = engine(n.instance);
  if (!eng) return Node{};
  if (parts.empty()) {
    n.kind = Node::Kind::Root;
    return n;
  }
  if (parts[0] == "per_cpu") return resolve_per_cpu(*eng, std::span(parts).subspan(1), std::move(n));
  if (parts.size() == 1) {
    if (parts[0] == "events")
      n.kind = Node::Kind::EventsDir;
    else if (parts[0] == "options")
      n.kind = Node::Kind::OptionsDir;
    else
      return file_in(n, n.instance.empty() ? kTopRoot : kInstanceRoot, parts[0]);
    return n;
  }
  if (parts[0] == "options") return parts.size() == 2 ? file_in(n, kOptionsDir, parts[1]) : n;
  if (parts[0] != "events" || parts.size() > 4) return n;
  if (parts.size() == 2) {
    if (Node file = file_in(n, kEventsDir, parts[1]); file.row) return file;
  }
  if (!has_system(*eng, parts[1])) return n;
  n.system = parts[1];
  if (parts.size() == 2) {
    n.kind = Node::Kind::SystemDir;
    return n;
  }
  if (parts.size() == 3) {
    if (Node file = file_in(n, kSystemDir, parts[2]); file.row) return file;
  }
  if (!has_event(*eng, parts[1], parts[2])) return n;
  n.event = parts[2];
  if (parts.size() == 3) {
    n.kind = Node::Kind::EventDir;
    return n;
  }
  return file_in(n, kEventDir, parts[3]);
}

Node Namespace::resolve_per_cpu(engine::Engine& engine, std::span<const std::string> parts, Node n) const {
  if (parts.empty()) {
    n.kind = Node::Kind::PerCpuDir;
    return n;
  }
  // cpuN for each possible CPU, as tracefs has them, "cpu" and a number
  // without sign or leading zero.
  const std::string_view name = parts[0];
  const std::string_view digits = name.substr(std::min<size_t>(3, name.size()));
  if (!name.starts_with("cpu") || digits.empty() || digits.size() > 6 || (digits.size() > 1 && digits[0] == '0') ||
      digits.find_first_not_of("0123456789") != std::string_view::npos)
    return Node{};
  const int cpu = std::stoi(std::string(digits));
  if (static_cast<uint32_t>(cpu) >= engine.trace_ring().cpus() || parts.size() > 2) return Node{};
  n.cpu = cpu;
  if (parts.size() == 1) {
    n.kind = Node::Kind::CpuDir;
    return n;
  }
  return file_in(n, kCpuDir, parts[1]);
}

std::vector<std::string> Namespace::list(const Node& dir) const {
  std::vector<std::string> out;
  const auto eng = engine(dir.instance);
  if (!eng) return out;
  // The files a directory at `place` has, in the table's order.
  const auto files = [&](Place place) {
    for (const TreeFile& f : tree_files())
      if ((f.places & place) != 0 && (!f.present || f.present(*this, dir, f.name))) out.emplace_back(f.name);
  };
  switch (dir.kind) {
    case Node::Kind::Root:
      files(dir.instance.empty() ? kTopRoot : kInstanceRoot);
      out.emplace_back("events");
      out.emplace_back("options");
      out.emplace_back("per_cpu");
      if (dir.instance.empty() && instances_) out.emplace_back("instances");
      break;
    case Node::Kind::InstancesDir:
      if (instances_) out = instances_->names();
      break;
    case Node::Kind::OptionsDir:
      files(kOptionsDir);
      break;
    case Node::Kind::EventsDir: {
      const std::set<std::string> names = systems(*eng);
      out.assign(names.begin(), names.end());
      files(kEventsDir);
      break;
    }
    case Node::Kind::SystemDir: {
      const auto events = events_of(*eng, dir.system);
      out.assign(events.begin(), events.end());
      files(kSystemDir);
      break;
    }
    case Node::Kind::EventDir:
      files(kEventDir);
      break;
    case Node::Kind::PerCpuDir:
      for (uint32_t cpu = 0; cpu < eng->trace_ring().cpus(); ++cpu) out.push_back(fmt::format("cpu{}", cpu));
      break;
    case Node::Kind::CpuDir:
      files(kCpuDir);
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
  if (is_synthetic(system)) return !engine.reads().synthetic_names().empty();
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
    auto names = engine.reads().synthetic_names();
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
  for (const engine::TriggerInfo& t : engine.reads().trigger_lines())
    if (t.system == system && !t.event.empty()) out.insert(t.event);
  return out;
}

std::string Namespace::available_events() const {
  std::set<std::pair<std::string, std::string>> all;
  // The kernel's events as its own list has them now: a probe event made
  // or deleted since histd started is there or gone at once, and the
  // ftrace pseudo-events (no enable file) are left out, as tracefs does.
  // A tree without that file (a test's fixture): the events histd knows.
  const std::string kernel = read_text(engine_->catalog().root() / "available_events");
  std::istringstream lines(kernel);
  for (std::string line; std::getline(lines, line);)
    if (const size_t colon = line.find(':'); colon != std::string::npos && colon > 0)
      all.emplace(line.substr(0, colon), line.substr(colon + 1));
  if (kernel.empty()) {
    for (const auto& [sys, events] : systems_)
      for (const auto& ev : events) all.emplace(sys, ev);
    for (const catalog::EventId& id : engine_->catalog().discovered_events()) all.emplace(id.system, id.name);
    std::erase_if(
        all, [](const auto& e) { return !catalog::source_traits(catalog::event_source(e.first)).has_enable_file; });
  }
  for (const catalog::EventId& id : engine_->catalog().dynamic_events())
    if (id.system != kSynthSystem) all.emplace(id.system, id.name);
  std::string out;
  for (const auto& [sys, ev] : all) out += sys + ":" + ev + "\n";
  for (const std::string& ev : engine_->reads().synthetic_names()) out += std::string(kSynthSystem) + ":" + ev + "\n";
  return out;
}

const std::string* Namespace::header(std::string_view name) const {
  const auto it = headers_.find(name);
  return it == headers_.end() ? nullptr : &it->second;
}

bool Namespace::has_probe_file(std::string_view name) const {
  return std::find(probe_files_.begin(), probe_files_.end(), name) != probe_files_.end();
}

int Namespace::generate(const Node& n, const render::Options& options, std::string& out) const {
  const std::shared_ptr<engine::Engine> held = this->engine(n);
  if (!held) return -ENOENT;  // its instance was removed
  out.clear();
  if (!n.row || !n.row->read) return 0;
  return n.row->read(FileCall{*this, *held, n, options}, out);
}

Expected<std::string> hist_text(engine::Engine& engine, const Node& n, const render::Options& options) {
  auto hist = engine.reads().hist(n.system, n.event);
  if (!hist) return unexpected(std::move(hist).error());
  return render::hist_text(*hist, engine.resolver(), options);
}

Expected<std::string> hist_json(engine::Engine& engine, const Node& n, const render::Options& options) {
  auto hist = engine.reads().hist(n.system, n.event);
  if (!hist) return unexpected(std::move(hist).error());
  return render::hist_json(*hist, engine.resolver(), options);
}

}  // namespace histd::fs
