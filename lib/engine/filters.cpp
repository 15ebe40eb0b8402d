// SPDX-License-Identifier: GPL-2.0-only
// The engine's event filters: the `filter` files of events and systems,
// decided by the registry (registry::EventFilter, SystemFilter), saved
// with the triggers, carried out by rebuilding the recorded events' programs.
// The Engine's writes take its lock and run through the Commands.
#include <fmt/format.h>

#include "engine/commands.h"
#include "engine/state_file.h"
#include "histd/engine.h"

namespace histd::engine {

namespace {

// Where the kernel's filter errors go in error_log (its tracing_log_err()
// from append_filter_err()).
constexpr const char* kFilterErrorLocation = "event filter parse error";

}  // namespace

CommandResult Engine::set_filter(const std::string& system, const std::string& event, std::string_view text) {
  return compiled_outside([&] { return commands_->set_filter(system, event, text); });
}

CommandResult Engine::set_system_filter(const std::string& system, std::string_view text) {
  return compiled_outside([&] { return commands_->set_system_filter(system, text); });
}

CommandResult Commands::set_filter(const std::string& system, const std::string& event, std::string_view text) {
  const std::string location = fmt::format("{}:{}/filter", system, event);
  if (auto room = state_.reserve(text.size()); !room)
    return finish_command(location, text, nullptr, system_failure(std::move(room).error()));
  return finish_command(location, text, nullptr, filter(catalog::EventId{system, event}, text));
}

CommandResult Commands::filter(const catalog::EventId& event, std::string_view text) {
  return run(registry::EventFilter{event, std::string(text)}, nullptr, kFilterErrorLocation, {});
}

CommandResult Commands::set_system_filter(const std::string& system, std::string_view text) {
  const std::string location = fmt::format("{}/filter", system);
  if (auto room = state_.reserve(text.size()); !room)
    return finish_command(location, text, nullptr, system_failure(std::move(room).error()));
  return finish_command(location, text, nullptr,
                        run(registry::SystemFilter{system, std::string(text)}, nullptr, kFilterErrorLocation, {}));
}

}  // namespace histd::engine
