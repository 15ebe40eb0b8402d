// SPDX-License-Identifier: GPL-2.0-only
// What the tree's paths name: its directories (the root, events/ with a
// directory per system and per event, options/, instances/<name>/ with an
// instance's own, histd/instances.h) and its files, which files.h lists a
// row each.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fs/files.h"
#include "histd/engine.h"
#include "histd/instances.h"
#include "histd/render.h"

namespace histd::fs {

struct Node {
  // Root: the tree's root, or an instance's directory (instance set).
  // PerCpuDir: per_cpu/; CpuDir: per_cpu/cpuN/ (cpu set).
  enum class Kind { None, Root, InstancesDir, EventsDir, SystemDir, EventDir, OptionsDir, PerCpuDir, CpuDir, File };
  Kind kind = Kind::None;
  std::string instance;  // "" for the top tree
  std::string system;
  std::string event;
  std::string file;               // README, format, trigger, ...
  int cpu = -1;                   // per_cpu/cpuN/ and its files: N
  const TreeFile* row = nullptr;  // what the file does (files.h)
  bool is_dir() const { return kind != Kind::None && kind != Kind::File; }
};

// Files that take writes (trigger, error_log, trace_marker, ...).
inline bool writable(const Node& n) { return n.row != nullptr && n.row->write != nullptr; }

// The mode a node is shown with, which the kernel enforces
// (default_permissions). Reads are as private as writes, as tracefs (0700,
// root) is: root alone, or with a group (--group) its members too, read
// everything; the group writes what root writes.
mode_t node_mode(const Node& n, gid_t group);

class Namespace {
 public:
  // The kernel's events are those tracefs had at mount, plus any created
  // since (kprobe and uprobe events), found by name; synthetic events are
  // asked of the engine at every lookup.
  // `instances`: the tree's instances/ (null: the tree has none).
  Namespace(engine::Engine& engine, instances::Instances* instances);

  // `path` is "/" or "/events/sched/sched_switch/hist".
  Node resolve(std::string_view path) const;
  // A directory's entries, without "." and "..".
  std::vector<std::string> list(const Node& dir) const;
  // The content of a file as `options` shows it to a reader, made by its
  // row's read (none: empty), or a negative errno.
  int generate(const Node& n, const render::Options& options, std::string& out) const;

  // The engine of the top tree (""), or of an instance (null once it is
  // removed); holding it keeps it alive.
  std::shared_ptr<engine::Engine> engine(const std::string& instance) const;
  std::shared_ptr<engine::Engine> engine(const Node& n) const { return engine(n.instance); }
  instances::Instances* instances() const { return instances_; }
  // Whether `n` stays, with the same mode, for as long as the tree is
  // mounted: the top tree's own files and directories (not its root) and the kernel's
  // tracepoint events it had at mount, never an instance, a synthetic or a
  // probe event (those come and go). The kernel may keep such names and
  // attributes (kFixedTimeout) rather than ask at every path walk.
  bool fixed(const Node& n) const;
  // "system:event" a line, every event the tree has.
  std::string available_events() const;
  // events/header_page or header_event as tracefs had it at mount; null if
  // it had none.
  const std::string* header(std::string_view name) const;
  // Whether the kernel has kprobe_events or uprobe_events (`name`).
  bool has_probe_file(std::string_view name) const;
  // The systems of `engine`'s events/ (synthetic with its events), and a
  // system's events.
  std::set<std::string> systems(engine::Engine& engine) const;
  std::set<std::string> events_of(engine::Engine& engine, const std::string& system) const;

 private:
  Node resolve_in(const std::vector<std::string>& parts, size_t first, Node n) const;
  bool has_system(engine::Engine& engine, const std::string& system) const;
  bool has_event(engine::Engine& engine, const std::string& system, const std::string& event) const;
  std::set<std::string> engine_events_of(engine::Engine& engine, const std::string& system) const;
  // The file `name` in directory `n` (at `place`), or `n` unchanged.
  Node file_in(Node n, Place place, std::string_view name) const;
  // per_cpu/ and what is under it: `parts` after per_cpu.
  Node resolve_per_cpu(engine::Engine& engine, std::span<const std::string> parts, Node n) const;

  engine::Engine* engine_;
  instances::Instances* instances_;
  std::map<std::string, std::set<std::string>> systems_;  // at mount: system -> events
  std::set<std::string> fixed_systems_;                   // of systems_, those whose every event is a tracepoint
  // events/header_page and header_event as the kernel's tracefs had them at
  // mount (they describe its ring buffer, which does not change while it runs).
  std::map<std::string, std::string, std::less<>> headers_;
  std::vector<std::string> probe_files_;  // kprobe_events, uprobe_events: those tracefs has
};

// The text of hist or hist.json as a reader shown `options` reads it: the
// engine's tables, rendered here, outside the engine's lock.
Expected<std::string> hist_text(engine::Engine& engine, const Node& n, const render::Options& options);
Expected<std::string> hist_json(engine::Engine& engine, const Node& n, const render::Options& options);

}  // namespace histd::fs
