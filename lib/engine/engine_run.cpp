// Engine::run: every command is decided by the registry
// (registry::Registry::apply, pure), carried out by the deployer
// (deploy::Deployer::deploy, which undoes its own failures), and only then
// committed (registry_ = next).
#include "histd/engine.h"

namespace histd::engine {

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
  CommandResult r = deployer_->deploy(applied->changes, applied->next, ev, text);
  if (!r) return r;
  registry_ = std::move(applied->next);
  return Unit{};
}

}  // namespace histd::engine
