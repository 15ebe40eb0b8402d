// SPDX-License-Identifier: GPL-2.0-only
// The engine's side of the deployer's batches (a reload's commands:
// ConfigItems::begin_batch, end_batch): what the kernel refused at the
// batch's end goes back out of the registry (Commands::take_back).
#include "engine/commands.h"
#include "engine/state_file.h"
#include "histd/config_items.h"

namespace histd::engine {

void ConfigItems::begin_batch() {
  std::lock_guard lock(mu_);
  deployer_.begin_batch();
}

BatchCommand::BatchCommand(deploy::Deployer& deployer) : deployer_(deployer) { deployer_.set_batch_command(true); }

BatchCommand::~BatchCommand() { deployer_.set_batch_command(false); }

std::optional<BatchRefusal> Commands::take_back(const deploy::Deployer::Refused& refused, bool logged) {
  const auto [event, trigger] = registry_.find(refused.uid);
  if (!trigger) return std::nullopt;
  const catalog::EventId id = *event;
  ConfigItem item{ConfigItem::Kind::Trigger, id.system + ":" + id.name, trigger->config, true,
                  registry::Registry::identity(*trigger)};
  const std::string command = trigger->plan.trigger_text();
  // The deployer dropped it already: only the registry still holds it.
  (void)run(registry::TriggerRemove{id, refused.uid, std::nullopt, command}, &id, "hist:" + item.event, command);
  CommandFailure failure{std::nullopt, refused.error};
  if (logged) failure = finish_command("hist:" + item.event, command, &id, system_failure(refused.error)).error();
  return BatchRefusal{std::move(item), std::move(failure)};
}

std::vector<BatchRefusal> ConfigItems::end_batch() {
  std::lock_guard lock(mu_);
  std::vector<BatchRefusal> out;
  for (deploy::Deployer::Refused& refused : deployer_.end_batch())
    if (auto r = commands_.take_back(refused); r && !r->item.text.empty()) out.push_back(std::move(*r));
  (void)state_.save();
  return out;
}

}  // namespace histd::engine
