// SPDX-License-Identifier: GPL-2.0-only
// `histctl explain` of a command through histd (Engine::preview): the
// command is decided by the registry as a write would be, and deployed with
// the deployer stopping before its first compile (deploy::CompileOutside's
// preview), whose roll back leaves everything as it was; the registry is
// never committed and nothing is logged or saved.
#include <fmt/format.h>

#include "engine/commands.h"

namespace histd::engine {

namespace {

CommandFailure invalid(std::string why) {
  return CommandFailure{std::nullopt, Error{ErrorKind::Invalid, EINVAL, std::move(why)}};
}

}  // namespace

Result<std::string, CommandFailure> Commands::preview(const catalog::EventId& id, std::string_view text) {
  if (!catalog_.contains(id.system, id.name))
    return unexpected(CommandFailure{
        std::nullopt, Error{ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", id.system, id.name)}});
  auto write = registry::TriggerWrite::parse(id, text, registry::kMaxCommandBytes, {});
  if (!write) return unexpected(CommandFailure{std::move(write).error(), Error{ErrorKind::Invalid, EINVAL, {}}});
  const std::unique_lock<std::mutex> shared = budget_decisions();
  auto applied = registry_.apply(*write);
  if (!applied) {
    registry::Refusal no = std::move(applied).error();
    return unexpected(CommandFailure{std::move(no.diagnostic), std::move(no.error)});
  }
  // Anything but one new trigger of the event would be carried out, or
  // show another event's program first (a field variable's).
  const std::vector<registry::Change>& changes = applied->changes;
  if (changes.size() != 1 || changes[0].kind != registry::Change::Kind::TriggerAdded || changes[0].event != id)
    return unexpected(invalid(
        "explain through histd shows a new hist trigger of the event alone; this command " +
        std::string(changes.size() > 1 ? "adds field variables on another event too" : "changes what the event has")));
  const plan::HistPlan plan = applied->next.find(changes[0].uid).second->plan;
  CommandResult r = deployer_.deploy(changes, applied->next, &id, write->logged());
  if (r) {
    deployer_.take_back(changes);
    return unexpected(invalid("the command compiled nothing to show"));
  }
  if (r.error().error.kind != ErrorKind::NotCompiled) return unexpected(std::move(r).error());
  return deploy::KernelReads::plan_of(plan);
}

Result<Engine::Preview, CommandFailure> Engine::preview(const std::string& system, const std::string& event,
                                                        std::string_view text) {
  std::lock_guard lock(mu_);
  deploy::CompileOutside outside;
  outside.preview = true;
  deployer_->compile_outside(&outside);
  auto plan = commands_->preview(catalog::EventId{system, event}, text);
  deployer_->compile_outside(nullptr);
  if (!plan) return unexpected(std::move(plan).error());
  if (!outside.needed) return unexpected(invalid("the command compiled nothing to show"));
  return Preview{std::move(*plan), std::move(*outside.needed)};
}

}  // namespace histd::engine
