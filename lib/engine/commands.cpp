// SPDX-License-Identifier: GPL-2.0-only
// Commands (commands.h): every command is decided by the registry
// (registry::Registry::apply, pure), carried out by the deployer
// (deploy::Deployer::deploy, which undoes its own failures), and only then
// committed (registry_ = next) and saved.
#include "engine/commands.h"

#include <fmt/format.h>

#include <utility>

#include "engine/error_log.h"
#include "engine/state_file.h"

namespace histd::engine {

void ActivationTimes::add(std::chrono::duration<double> took) {
  size_t i = 0;
  while (i < kBounds.size() && took.count() > kBounds[i]) ++i;
  ++counts[i];
  sum_seconds += took.count();
}

CommandResult Commands::refuse(registry::Refusal no, const catalog::EventId* ev, const std::string& location) {
  // Field variables were tried on their matching events as commands there:
  // their hist files drop an older error, and show a refusal of their own.
  for (const catalog::EventId& id : no.tried_on) begin_command(id);
  for (auto& [id, d] : no.logged_on) (void)user_error(id, std::move(d));
  if (!no.diagnostic) return system_failure(std::move(no.error));
  if (ev) return user_error(*ev, std::move(*no.diagnostic), no.error.err);
  errors_.add(location, *no.diagnostic);
  return unexpected(CommandFailure{std::move(no.diagnostic), std::move(no.error)});
}

Commands::Commands(State state)
    : catalog_(state.catalog),
      options_(state.options),
      registry_(state.registry),
      deployer_(state.deployer),
      errors_(state.errors),
      state_(state.state) {}

Commands::~Commands() {
  if (options_.map_budget) options_.map_budget->forget(this);
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

std::unique_lock<std::mutex> Commands::budget_decisions() {
  if (!options_.map_budget) return {};
  std::unique_lock lock(options_.map_budget->decisions());
  registry_.set_map_memory_elsewhere(options_.map_budget->held_by_others(this));
  return lock;
}

CommandResult Commands::run(const registry::Command& command, const catalog::EventId* ev, const std::string& location,
                            const std::string& text) {
  const std::chrono::duration<double> compiled_outside = std::exchange(compiled_outside_, {});
  const std::unique_lock<std::mutex> shared = budget_decisions();
  auto applied = registry_.apply(command);
  if (!applied) return refuse(std::move(applied).error(), ev, location);
  // A field variable is a command on its matching event too: that event's
  // hist file shows what became of it.
  for (const registry::Change& c : applied->changes)
    if (c.kind == registry::Change::Kind::TriggerAdded && (!ev || c.event != *ev)) begin_command(c.event);
  const auto began = std::chrono::steady_clock::now();
  CommandResult r = deployer_.deploy(applied->changes, applied->next, ev, text);
  if (!r) return r;
  if (!applied->changes.empty()) activation_times_.add(std::chrono::steady_clock::now() - began + compiled_outside);
  registry_ = std::move(applied->next);
  if (options_.map_budget) options_.map_budget->set(this, registry_.map_memory());
  return Unit{};
}

void Commands::deployer_log(const catalog::EventId* event, const Diagnostic* d, const std::string& note) {
  if (d && event) {
    errors_.add(fmt::format("hist:{}:{}", event->system, event->name), *d);
    notes_[*event].last_error = *d;
    return;
  }
  errors_.note(note);
}

CommandResult Commands::user_error(const catalog::EventId& ev, Diagnostic d, int err) {
  errors_.add(fmt::format("hist:{}:{}", ev.system, ev.name), d);
  notes_[ev].last_error = d;
  return unexpected(CommandFailure{std::move(d), Error{err == EINVAL ? ErrorKind::Invalid : ErrorKind::Busy, err, {}}});
}

void Commands::begin_command(const catalog::EventId& ev) {
  EventNotes& notes = notes_[ev];
  notes.last_error.reset();
  ++notes.generation;
}

CommandResult Commands::write_trigger(const std::string& system, const std::string& event, std::string_view text,
                                      size_t max_bytes, const std::string* config, bool may_see_addresses) {
  if (!catalog_.contains(system, event))
    return system_failure(Error{ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event)});
  const catalog::EventId id{system, event};
  const std::string location = fmt::format("hist:{}:{}", system, event);
  if (auto room = state_.reserve(text.size()); !room) {
    begin_command(id);
    return finish_command(location, text, &id, system_failure(std::move(room).error()));
  }
  // The one parse of this write: the registry decides on the parsed command.
  auto write = registry::TriggerWrite::parse(id, text, max_bytes, config ? *config : std::string());
  begin_command(id);
  if (!write) return finish_command(location, text, &id, user_error(id, std::move(write).error()));
  write->may_see_addresses = may_see_addresses;
  const std::string logged = write->logged();
  return finish_command(location, text, &id, run(*write, &id, location, logged));
}

CommandResult Commands::finish_command(const std::string& location, std::string_view command,
                                       const catalog::EventId* ev, CommandResult r) {
  auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  std::string cmd(command);
  while (!cmd.empty() && (cmd.back() == '\n' || cmd.back() == ' ' || cmd.back() == '\t')) cmd.pop_back();
  if (!r) {
    state_.drop_room();
    // Not a failure: the engine compiles outside its lock and runs it again.
    if (r.error().error.kind == ErrorKind::NotCompiled) return r;
    // ENOENT and EBUSY refusals (removing what is not there or still in
    // use) are the kernel's silent ones: errno only, no error_log entry.
    const ErrorKind kind = r.error().error.kind;
    if (!r.error().diagnostic && kind != ErrorKind::NotFound && kind != ErrorKind::Busy) {
      // The whole text (a verifier log, clang's output) goes back to the
      // caller; error_log keeps tracefs's one-line shape.
      Diagnostic d{ErrorCode::CommandFailed, Span{0, 0}, cmd, first_line(r.error().error.context)};
      errors_.add(location, d);
      if (ev) notes_[*ev].last_error = std::move(d);
    }
    return r;
  }
  if (auto st = state_.save(); !st) {
    // Not expected once room was reserved; the change stays applied.
    Diagnostic d{ErrorCode::StateNotSaved, Span{0, 0}, cmd, st.error().context};
    errors_.add(location, d);
    if (ev) notes_[*ev].last_error = std::move(d);
  }
  return r;
}

CommandResult Commands::truncate_triggers(const std::string& system, const std::string& event) {
  const catalog::EventId id{system, event};
  const registry::EventTriggers* triggers = registry_.triggers(id);
  if (!triggers && !notes_.count(id)) return Unit{};
  ++notes_[id].generation;
  if (!triggers || triggers->empty()) return Unit{};
  // Opening the file with O_TRUNC is the command; the log shows it as such.
  const std::string location = fmt::format("hist:{}:{}", system, event);
  if (auto room = state_.reserve(0); !room)
    return finish_command(location, "(truncate)", &id, system_failure(std::move(room).error()));
  return finish_command(location, "(truncate)", &id, run(registry::TriggerTruncate{id}, &id, location, {}));
}

}  // namespace histd::engine
