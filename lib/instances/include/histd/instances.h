// SPDX-License-Identifier: GPL-2.0-only
// The tree's instances (`mkdir instances/NAME`), as tracefs has them: each
// a second set of event triggers, enable states, trace buffer, snapshot,
// trace_marker and tracing_on over the same kernel events, and `rmdir`
// removes it with everything in it. histd runs each instance as an engine
// of its own (engine::Engine) that compiles through the top engine's
// compiler, saves its state under <state>/instances/ and pins its tables
// under <pins>/instances/, so an instance and its counts outlive a restart
// as the top tree's do. Synthetic events and eprobes stay the top tree's
// (an instance's events/ has the kernel's events), and named tables are
// shared within an instance, not across instances.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "histd/engine.h"
#include "histd/result.h"

namespace histd::instances {

// The longest name histd takes (its directories are named after its bytes
// in hex, within a file name's 255), and the most instances at once
// histd --max-instances may allow (32 by default).
inline constexpr size_t kMaxNameBytes = 120;
inline constexpr size_t kMaxInstances = 1024;

struct Options {
  // The top engine's options; each instance gets its own state file and
  // pin directory, the same limits (per instance, but for the map memory:
  // EngineOptions::map_budget, one for every tree) and object cache.
  engine::EngineOptions engine;
  std::filesystem::path state_dir;  // where instances are saved (empty: not saved)
  std::filesystem::path pin_dir;    // where their tables are pinned (empty: not pinned)
  size_t max_instances = 32;
};

// The directory name of an instance ("i-" and its name's bytes in hex) and
// back (nullopt: not an instance's directory).
std::string directory_name(const std::string& name);
std::optional<std::string> name_of_directory(const std::string& dir);

class Instances {
 public:
  // `top` must outlive the instances (its compiler and catalog are shared).
  Instances(const engine::Engine& top, Options options);
  ~Instances();
  Instances(const Instances&) = delete;
  Instances& operator=(const Instances&) = delete;

  // mkdir instances/NAME: EEXIST, ENAMETOOLONG, ENOSPC past the limit.
  Status create(const std::string& name);
  // rmdir instances/NAME: its programs detached, its tables, buffers and
  // saved state gone (ENOENT if there is no such instance).
  Status remove(const std::string& name);
  // The instance's engine (null: none of that name). Holding it keeps the
  // engine alive through a concurrent remove.
  std::shared_ptr<engine::Engine> find(const std::string& name) const;
  std::vector<std::string> names() const;

  // At start, before the tree is served: every saved instance created
  // again with its triggers (the problems, for the log); pins of instances
  // that are no longer saved (a remove cut short) are dropped.
  std::vector<std::string> restore();
  // After daemonizing: the engines' ring consumers (threads do not survive
  // the fork). Instances created later start their own.
  void start_consumers();
  // Every engine stopped (pins and state kept: the next start restores them).
  void shutdown();

 private:
  Expected<std::shared_ptr<engine::Engine>> make_engine(const std::string& name, bool defer_consumer) const;

  const engine::Engine& top_;
  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<engine::Engine>> engines_;
  bool started_ = false;  // consumers run: a new instance starts its own
};

}  // namespace histd::instances
