// SPDX-License-Identifier: GPL-2.0-only
// ConfigItems (histd/config_items.h): the configuration directory's items,
// and the calls config::reconcile makes to add, remove and update them.
// The mark is recorded before the change is saved, so a crash never
// leaves a declared trigger looking like a user's (which the next reload
// would then declare a second time). Commands::write_config_synthetic is
// here too.
#include "histd/config_items.h"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "engine/commands.h"
#include "engine/error_log.h"
#include "engine/state_file.h"

namespace histd::engine {

namespace {

CommandResult not_found(const ConfigItem& item) {
  return system_failure(
      Error{ErrorKind::NotFound, ENOENT, fmt::format("{} {} is not the configuration's", item.event, item.text)});
}

std::optional<std::pair<std::string, std::string>> split_event(const std::string& event) {
  const size_t colon = event.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == event.size()) return std::nullopt;
  return std::pair{event.substr(0, colon), event.substr(colon + 1)};
}

}  // namespace

ConfigItems::ConfigItems(Parts parts)
    : mu_(parts.lock),
      commands_(parts.commands),
      state_(parts.state),
      errors_(parts.errors),
      registry_(parts.registry),
      deployer_(parts.deployer) {}

std::vector<ConfigItem> ConfigItems::items() {
  std::lock_guard lock(mu_);
  std::vector<ConfigItem> out;
  for (const auto& [name, s] : registry_.synthetics())
    if (s.config) out.push_back({ConfigItem::Kind::Synthetic, name, synth::list_line(s.def), true});
  std::vector<std::pair<uint64_t, ConfigItem>> hist;
  for (const auto& [id, triggers] : registry_.events())
    for (const registry::HistTrigger& t : triggers.hist)
      if (!t.config.empty())
        hist.emplace_back(t.uid, ConfigItem{ConfigItem::Kind::Trigger, id.system + ":" + id.name, t.config, true,
                                            registry::Registry::identity(t)});
  std::sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [uid, item] : hist) out.push_back(std::move(item));
  for (const auto& [id, triggers] : registry_.events())
    for (const registry::ControlTrigger& e : triggers.controls)
      if (!e.config.empty()) out.push_back({ConfigItem::Kind::Trigger, id.system + ":" + id.name, e.config, true});
  for (const SavedEntry& e : state_.not_restored()) {
    if (e.config.empty() || e.kind == SavedEntry::Kind::Enabled) continue;
    if (e.kind == SavedEntry::Kind::Synthetic)
      out.push_back({ConfigItem::Kind::Synthetic, e.config, e.command, false});
    else
      out.push_back({ConfigItem::Kind::Trigger, e.event, e.config, false});
  }
  return out;
}

std::string ConfigItems::identity(const ConfigItem& item) {
  if (item.kind != ConfigItem::Kind::Trigger) return {};
  auto names = split_event(item.event);
  if (!names) return {};
  std::lock_guard lock(mu_);
  return registry_.identity_of(catalog::EventId{names->first, names->second}, item.text);
}

std::optional<CommandResult> ConfigItems::retry(const ConfigItem& item) {
  const bool synthetic = item.kind == ConfigItem::Kind::Synthetic;
  std::vector<SavedEntry>& kept = state_.not_restored();
  for (size_t i = 0; i < kept.size(); ++i) {
    SavedEntry& e = kept[i];
    if (e.config.empty() || (e.kind == SavedEntry::Kind::Synthetic) != synthetic) continue;
    if (synthetic ? e.config != item.event : e.event != item.event || e.config != item.text) continue;
    // As Restorer::retry(): its own save must not list it a second time.
    e.applying = true;
    const SavedEntry copy = e;
    CommandResult r = commands_.apply_saved(copy);
    if (r) {
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      kept[i].applying = false;
      kept[i].reason = r.error().message().substr(0, r.error().message().find('\n'));
    }
    return r;
  }
  return std::nullopt;
}

CommandResult ConfigItems::add(const ConfigItem& item, const std::string& location) {
  std::lock_guard lock(mu_);
  const BatchCommand own(deployer_);
  errors_.set_location(location);
  CommandResult r = Unit{};
  if (auto retried = retry(item)) {
    r = std::move(*retried);
  } else if (item.kind == ConfigItem::Kind::Synthetic) {
    r = commands_.write_config_synthetic(item.text);
  } else if (auto ev = split_event(item.event)) {
    r = commands_.write_trigger(ev->first, ev->second, item.text, registry::kMaxCommandBytes, &item.text);
  } else {
    r = system_failure(Error{ErrorKind::Invalid, EINVAL, "expected SYSTEM:EVENT, got '" + item.event + "'"});
  }
  errors_.set_location({});
  return r;
}

CommandResult ConfigItems::remove(const ConfigItem& item) {
  std::lock_guard lock(mu_);
  const BatchCommand own(deployer_);
  // A saved entry that did not restore: dropped from the state file.
  std::vector<SavedEntry>& kept = state_.not_restored();
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    const bool synth = it->kind == SavedEntry::Kind::Synthetic;
    if (item.restored || it->config.empty() || synth != (item.kind == ConfigItem::Kind::Synthetic)) continue;
    if (synth ? it->config != item.event : it->event != item.event || it->config != item.text) continue;
    if (auto room = state_.reserve(0); !room) return system_failure(std::move(room).error());
    kept.erase(it);
    return commands_.finish_command(synth ? "synthetic_events" : "hist:" + item.event, item.text, nullptr, Unit{});
  }
  if (!item.restored) return not_found(item);
  if (item.kind == ConfigItem::Kind::Synthetic) {
    auto s = registry_.synthetics().find(item.event);
    if (s == registry_.synthetics().end() || !s->second.config) return not_found(item);
    return commands_.write_synthetic("!" + item.event);
  }
  auto names = split_event(item.event);
  if (!names) return not_found(item);
  const catalog::EventId id{names->first, names->second};
  const registry::EventTriggers* triggers = registry_.triggers(id);
  if (!triggers) return not_found(item);
  // Removed as '!' and the line the trigger file prints for it would remove
  // it (its own command may have been a pause, which removes nothing), but
  // by what it is, not by parsing that line again.
  const registry::HistTrigger* trigger = nullptr;
  const registry::ControlTrigger* enable = nullptr;
  for (const registry::HistTrigger& t : triggers->hist)
    if (t.config == item.text) trigger = &t;
  for (const registry::ControlTrigger& e : triggers->controls)
    if (e.config == item.text) enable = &e;
  if (!trigger && !enable) return not_found(item);
  const std::string command = enable ? enable->cmd.command : trigger->plan.trigger_text();
  const std::string location = "hist:" + item.event;
  commands_.begin_command(id);
  if (auto room = state_.reserve(command.size() + 1); !room)
    return commands_.finish_command(location, "!" + command, &id, system_failure(std::move(room).error()));
  registry::TriggerRemove remove{id, trigger ? trigger->uid : 0, {}, command};
  if (enable) remove.control = enable->cmd;
  return commands_.finish_command(location, "!" + command, &id, commands_.run(remove, &id, location, command));
}

CommandResult ConfigItems::update(const ConfigItem& item, const std::string& text, bool paused) {
  std::lock_guard lock(mu_);
  const BatchCommand own(deployer_);
  auto names = split_event(item.event);
  if (item.kind != ConfigItem::Kind::Trigger || !names) return not_found(item);
  const catalog::EventId id{names->first, names->second};
  const registry::EventTriggers* triggers = registry_.triggers(id);
  if (!triggers) return not_found(item);
  auto t = std::find_if(triggers->hist.begin(), triggers->hist.end(),
                        [&](const registry::HistTrigger& h) { return h.config == item.text; });
  if (t == triggers->hist.end()) return not_found(item);
  if (auto room = state_.reserve(text.size()); !room) return system_failure(std::move(room).error());
  const std::string location = "hist:" + item.event;
  CommandResult r = commands_.run(registry::TriggerMark{t->uid, paused, text}, &id, location, text);
  commands_.touch(id);
  return commands_.finish_command(location, text, &id, std::move(r));
}

CommandResult Commands::write_config_synthetic(std::string_view text) {
  auto parsed = registry::SynthWrite::parse(text, true);
  if (!parsed || parsed->command.remove) return write_synthetic(text);  // its own errors
  if (auto room = state_.reserve(text.size()); !room)
    return finish_command("synthetic_events", text, nullptr, system_failure(std::move(room).error()));
  return finish_command("synthetic_events", text, nullptr, apply_synthetic(text, true));
}

}  // namespace histd::engine
