// SPDX-License-Identifier: GPL-2.0-only
#include "histd/instances.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <system_error>

namespace histd::instances {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "i-";
constexpr const char* kHex = "0123456789abcdef";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The kernel's catalog without the top tree's dynamic events (its synthetic
// events and eprobes): an instance traces the kernel's events.
catalog::Catalog kernel_catalog(const catalog::Catalog& top) {
  catalog::Catalog c = top;
  for (const catalog::EventId& id : c.dynamic_events()) c.remove_dynamic(id.system, id.name);
  return c;
}

// A directory only root may enter: an instance's state file holds its
// triggers, as the top one's does.
Status make_private_dir(const fs::path& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return fail_errno("mkdir " + dir.string());
  return ok_status();
}

}  // namespace

std::string directory_name(const std::string& name) {
  std::string out = kPrefix;
  for (unsigned char c : name) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

std::optional<std::string> name_of_directory(const std::string& dir) {
  if (!dir.starts_with(kPrefix) || dir.size() <= 2 || dir.size() % 2 != 0) return std::nullopt;
  std::string name;
  for (size_t i = 2; i < dir.size(); i += 2) {
    const int hi = hex_digit(dir[i]), lo = hex_digit(dir[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    name += static_cast<char>(hi << 4 | lo);
  }
  if (name.find('/') != std::string::npos || name.find('\0') != std::string::npos || name == "." || name == "..")
    return std::nullopt;
  return name;
}

Instances::Instances(const engine::Engine& top, Options options) : top_(top), options_(std::move(options)) {}

Instances::~Instances() { shutdown(); }

Expected<std::shared_ptr<engine::Engine>> Instances::make_engine(const std::string& name, bool defer_consumer) const {
  engine::EngineOptions eopt = options_.engine;
  eopt.defer_consumer = defer_consumer;
  const std::string dir = directory_name(name);
  eopt.state_file.clear();
  eopt.deploy.pin_dir.clear();
  if (!options_.state_dir.empty()) {
    if (auto ok = make_private_dir(options_.state_dir); !ok) return unexpected(std::move(ok).error());
    if (auto ok = make_private_dir(options_.state_dir / dir); !ok) return unexpected(std::move(ok).error());
    eopt.state_file = options_.state_dir / dir / "triggers.json";
  }
  if (!options_.pin_dir.empty()) {
    if (auto ok = make_private_dir(options_.pin_dir); !ok) return unexpected(std::move(ok).error());
    if (auto ok = make_private_dir(options_.pin_dir / dir); !ok) return unexpected(std::move(ok).error());
    eopt.deploy.pin_dir = options_.pin_dir / dir;
  }
  auto engine = engine::Engine::create(kernel_catalog(top_.catalog()), top_.shared_compiler(), std::move(eopt));
  if (!engine) return unexpected(std::move(engine).error());
  return std::shared_ptr<engine::Engine>(std::move(*engine));
}

Status Instances::create(const std::string& name) {
  if (name.size() > kMaxNameBytes)
    return fail(ErrorKind::Invalid, ENAMETOOLONG,
                fmt::format("an instance name is at most {} bytes in histd", kMaxNameBytes));
  std::lock_guard lock(mu_);
  if (engines_.count(name)) return fail(ErrorKind::Exists, EEXIST, "instance " + name + " exists");
  if (engines_.size() >= options_.max_instances)
    return fail(ErrorKind::Invalid, ENOSPC,
                fmt::format("the limit is {} (--max-instances) and {} exist", options_.max_instances, engines_.size()));
  auto engine = make_engine(name, !started_);
  if (!engine) return unexpected(std::move(engine).error());
  // A new instance is empty: nothing saved is left of an earlier one of
  // that name (remove() took it), and restore() sets the engine up to save.
  (void)(*engine)->restorer().restore();
  engines_.emplace(name, std::move(*engine));
  return ok_status();
}

Status Instances::remove(const std::string& name) {
  std::shared_ptr<engine::Engine> engine;
  {
    std::lock_guard lock(mu_);
    auto it = engines_.find(name);
    if (it == engines_.end()) return fail(ErrorKind::NotFound, ENOENT, "no instance " + name);
    engine = std::move(it->second);
    engines_.erase(it);
  }
  engine->shutdown();
  const std::string dir = directory_name(name);
  std::error_code ec;
  // The saved state first: a remove cut short (a crash) leaves pins only,
  // which the next start drops, never an instance that comes back.
  if (!options_.state_dir.empty()) fs::remove_all(options_.state_dir / dir, ec);
  if (ec) return fail(ErrorKind::System, ec.value(), "removing the saved state of instance " + name);
  // Unpinning the links detaches the programs; unpinning the maps frees them.
  if (!options_.pin_dir.empty()) fs::remove_all(options_.pin_dir / dir, ec);
  if (ec) return fail(ErrorKind::System, ec.value(), "removing the pins of instance " + name);
  return ok_status();
}

std::shared_ptr<engine::Engine> Instances::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = engines_.find(name);
  return it == engines_.end() ? nullptr : it->second;
}

std::vector<std::string> Instances::names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, e] : engines_) out.push_back(name);
  return out;
}

std::vector<std::string> Instances::restore() {
  std::vector<std::string> problems;
  std::error_code ec;
  std::lock_guard lock(mu_);
  if (!options_.state_dir.empty())
    for (const auto& entry : fs::directory_iterator(options_.state_dir, ec)) {
      const auto name = name_of_directory(entry.path().filename().string());
      if (!name || !entry.is_directory() || engines_.count(*name)) continue;
      auto engine = make_engine(*name, !started_);
      if (!engine) {
        // Kept as saved: the next start tries again.
        problems.push_back(fmt::format("instance {}: {}", *name, engine.error().context));
        continue;
      }
      for (const std::string& p : (*engine)->restorer().restore())
        problems.push_back(fmt::format("instance {}: {}", *name, p));
      engines_.emplace(*name, std::move(*engine));
    }
  if (!options_.pin_dir.empty())
    for (const auto& entry : fs::directory_iterator(options_.pin_dir, ec)) {
      const std::string dir = entry.path().filename().string();
      const auto name = name_of_directory(dir);
      if (!name || engines_.count(*name)) continue;
      // Saved but not restored: its pins keep its counts for the next try.
      if (!options_.state_dir.empty() && fs::exists(options_.state_dir / dir)) continue;
      std::error_code rm;
      fs::remove_all(entry.path(), rm);
    }
  return problems;
}

void Instances::start_consumers() {
  std::lock_guard lock(mu_);
  started_ = true;
  for (auto& [name, e] : engines_) e->start_consumer();
}

void Instances::shutdown() {
  std::map<std::string, std::shared_ptr<engine::Engine>> engines;
  {
    std::lock_guard lock(mu_);
    engines.swap(engines_);
  }
  for (auto& [name, e] : engines) e->shutdown();
}

}  // namespace histd::instances
