// Engine::run: every command is decided by the registry
// (registry::Registry::apply, pure), carried out by the deployer
// (Deployer::deploy, which undoes its own failures), and only then
// committed (registry_ = next).
#include "engine/deployer.h"
#include "histd/engine.h"
#include "histd/registry.h"

namespace histd::engine {

CommandResult Engine::refuse(registry::Refusal no, EventState* ev, const std::string& location) {
  // Field variables were tried on their matching events as commands there:
  // their hist files drop an older error, and show a refusal of their own.
  for (const catalog::EventId& id : no.tried_on) {
    EventState& other = deployer_->event_state(id.system, id.name);
    other.last_error.reset();
    ++other.generation;
  }
  for (auto& [id, d] : no.logged_on) (void)deployer_->user_error(deployer_->event_state(id.system, id.name), std::move(d));
  if (!no.diagnostic) return system_failure(std::move(no.error));
  if (ev) return deployer_->user_error(*ev, std::move(*no.diagnostic), no.error.err);
  log_error(location, *no.diagnostic);
  return unexpected(CommandFailure{std::move(no.diagnostic), std::move(no.error)});
}

CommandResult Engine::run(const registry::Command& command, EventState* ev, const std::string& location,
                          const std::string& text) {
  auto applied = registry_.apply(command);
  if (!applied) return refuse(std::move(applied).error(), ev, location);
  CommandResult r = deployer_->deploy(applied->changes, applied->next, ev, text);
  if (!r) return r;
  registry_ = std::move(applied->next);
  return Unit{};
}

// Looked up among its own event's triggers: listings and every save call
// this once per trigger.
const std::string& Engine::config_of(const EventState& ev, const Trigger& t) const {
  static const std::string none;
  if (const registry::EventTriggers* triggers = registry_.triggers(catalog::EventId{ev.system, ev.event}))
    for (const registry::HistTrigger& h : triggers->hist)
      if (h.uid == t.uid) return h.config;
  return none;
}

const std::string& Engine::config_of(const EventState& ev, const EnableTrigger& e) const {
  static const std::string none;
  if (const registry::EventTriggers* triggers = registry_.triggers(catalog::EventId{ev.system, ev.event}))
    for (const registry::EnableTrigger& x : triggers->enables)
      if (x.cmd.enable == e.cmd.enable && x.cmd.system == e.cmd.system && x.cmd.event == e.cmd.event) return x.config;
  return none;
}

}  // namespace histd::engine
