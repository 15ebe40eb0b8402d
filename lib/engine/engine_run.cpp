// SPDX-License-Identifier: GPL-2.0-only
// Engine::run: every command is decided by the registry
// (registry::Registry::apply, pure), carried out by the deployer
// (deploy::Deployer::deploy, which undoes its own failures), and only then
// committed (registry_ = next).
#include "engine/error_log.h"
#include "histd/engine.h"

namespace histd::engine {

void ActivationTimes::add(std::chrono::duration<double> took) {
  size_t i = 0;
  while (i < kBounds.size() && took.count() > kBounds[i]) ++i;
  ++counts[i];
  sum_seconds += took.count();
}

ActivationTimes Engine::activation_times() {
  std::lock_guard lock(mu_);
  return activation_times_;
}

CommandResult Engine::refuse(registry::Refusal no, const catalog::EventId* ev, const std::string& location) {
  // Field variables were tried on their matching events as commands there:
  // their hist files drop an older error, and show a refusal of their own.
  for (const catalog::EventId& id : no.tried_on) begin_command(id);
  for (auto& [id, d] : no.logged_on) (void)user_error(id, std::move(d));
  if (!no.diagnostic) return system_failure(std::move(no.error));
  if (ev) return user_error(*ev, std::move(*no.diagnostic), no.error.err);
  errors_->add(location, *no.diagnostic);
  return unexpected(CommandFailure{std::move(no.diagnostic), std::move(no.error)});
}

uint64_t MapMemoryBudget::held_by_others(const void* self) const {
  std::lock_guard lock(mu_);
  uint64_t sum = 0;
  for (const auto& [engine, bytes] : held_)
    if (engine != self) sum += bytes;
  return sum;
}

uint64_t MapMemoryBudget::held() const { return held_by_others(nullptr); }

void MapMemoryBudget::set(const void* self, uint64_t bytes) {
  std::lock_guard lock(mu_);
  held_[self] = bytes;
}

void MapMemoryBudget::forget(const void* self) {
  std::lock_guard lock(mu_);
  held_.erase(self);
}

CommandResult Engine::run(const registry::Command& command, const catalog::EventId* ev, const std::string& location,
                          const std::string& text) {
  // With a budget shared among trees: decided and committed under its
  // lock, knowing what the others hold (engines take it after their own
  // lock, never the other way round).
  std::unique_lock<std::mutex> shared;
  if (options_.map_budget) {
    shared = std::unique_lock(options_.map_budget->decisions());
    registry_.set_map_memory_elsewhere(options_.map_budget->held_by_others(this));
  }
  auto applied = registry_.apply(command);
  if (!applied) return refuse(std::move(applied).error(), ev, location);
  // A field variable is a command on its matching event too: that event's
  // hist file shows what became of it.
  for (const registry::Change& c : applied->changes)
    if (c.kind == registry::Change::Kind::TriggerAdded && (!ev || c.event != *ev)) begin_command(c.event);
  const auto began = std::chrono::steady_clock::now();
  CommandResult r = deployer_->deploy(applied->changes, applied->next, ev, text);
  if (!r) return r;
  if (!applied->changes.empty()) activation_times_.add(std::chrono::steady_clock::now() - began);
  registry_ = std::move(applied->next);
  if (options_.map_budget) options_.map_budget->set(this, registry_.map_memory());
  return Unit{};
}

}  // namespace histd::engine
