// SPDX-License-Identifier: GPL-2.0-only
// The engine's set_event_pid and options/event-fork: carried out by the
// deployer's EventPids (histd/event_pids.h), then saved. The Engine's calls
// take its lock and run through the Commands.
#include <fmt/format.h>

#include <fstream>

#include "engine/commands.h"
#include "engine/state_file.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

// Where their failures go in error_log.
constexpr const char* kPidsLocation = "set_event_pid";
constexpr const char* kForkLocation = "options/event-fork";

CommandResult done(Status st) {
  if (!st) return system_failure(std::move(st).error());
  return Unit{};
}

}  // namespace

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::optional<registry::SavedPids> saved_pids(const deploy::EventPids& pids) {
  if (!pids.in_force() && !pids.follows_forks()) return std::nullopt;
  return registry::SavedPids{boot_id(), pids.pids(), pids.follows_forks()};
}

std::vector<uint32_t> Engine::event_pids() {
  std::lock_guard lock(mu_);
  return deployer_->event_pids().pids();
}

CommandResult Engine::add_event_pids(std::span<const uint32_t> pids) {
  std::lock_guard lock(mu_);
  return commands_->add_event_pids(pids);
}

CommandResult Engine::clear_event_pids() {
  std::lock_guard lock(mu_);
  return commands_->clear_event_pids();
}

bool Engine::event_fork() {
  std::lock_guard lock(mu_);
  return deployer_->event_pids().follows_forks();
}

CommandResult Engine::set_event_fork(bool on) {
  std::lock_guard lock(mu_);
  return commands_->set_event_fork(on);
}

CommandResult Commands::add_event_pids(std::span<const uint32_t> pids) {
  const std::string text = fmt::format("{}", fmt::join(pids, " "));
  // Each pid is at most ten digits in the saved list.
  if (auto room = state_.reserve(11 * pids.size()); !room)
    return finish_command(kPidsLocation, text, nullptr, system_failure(std::move(room).error()));
  return finish_command(kPidsLocation, text, nullptr, done(deployer_.event_pids().add(pids)));
}

CommandResult Commands::clear_event_pids() {
  deploy::EventPids& pids = deployer_.event_pids();
  if (!pids.in_force()) return Unit{};
  if (auto room = state_.reserve(0); !room)
    return finish_command(kPidsLocation, "(truncate)", nullptr, system_failure(std::move(room).error()));
  return finish_command(kPidsLocation, "(truncate)", nullptr, done(pids.clear()));
}

CommandResult Commands::set_event_fork(bool on) {
  deploy::EventPids& pids = deployer_.event_pids();
  if (pids.follows_forks() == on) return Unit{};
  if (auto room = state_.reserve(0); !room)
    return finish_command(kForkLocation, on ? "1" : "0", nullptr, system_failure(std::move(room).error()));
  return finish_command(kForkLocation, on ? "1" : "0", nullptr, done(pids.follow_forks(on)));
}

CommandResult Commands::restore_pids(const registry::SavedPids& saved) {
  if (saved.boot_id != boot_id()) return Unit{};
  deploy::EventPids& pids = deployer_.event_pids();
  if (auto room = state_.reserve(11 * saved.pids.size()); !room) return system_failure(std::move(room).error());
  // As the tree writes them: the list, then whether it follows forks.
  if (Status st = pids.clear(); !st) return finish_command(kPidsLocation, "(restore)", nullptr, done(std::move(st)));
  Status st = saved.pids.empty() ? ok_status() : pids.add(saved.pids);
  if (st) st = pids.follow_forks(saved.event_fork);
  return finish_command(kPidsLocation, "(restore)", nullptr, done(std::move(st)));
}

}  // namespace histd::engine
