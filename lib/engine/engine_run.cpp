// Engine::run: every command is decided by the registry
// (registry::Registry::apply, pure), carried out by the deployer
// (deploy::Deployer::deploy, which undoes its own failures), and only then
// committed (registry_ = next).
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
  log_error(location, *no.diagnostic);
  return unexpected(CommandFailure{std::move(no.diagnostic), std::move(no.error)});
}

CommandResult Engine::run(const registry::Command& command, const catalog::EventId* ev, const std::string& location,
                          const std::string& text) {
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
  return Unit{};
}

}  // namespace histd::engine
