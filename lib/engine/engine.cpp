#include "histd/engine.h"

#include "engine/engine_state.h"
#include "engine/ring_passes.h"

#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "histd/pipeline.h"
#include "histd/parse.h"
#include "histd/symbols.h"
#include "histd/table_reader.h"
#include "hist_shared.h"

namespace histd::engine {

std::string CommandFailure::message() const {
  if (diagnostic) return diagnostic->message();
  return error.context;
}

namespace {

// An error_log entry stamped with CLOCK_MONOTONIC, as tracefs stamps them.
readout::ErrorLogEntry stamped_entry() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  readout::ErrorLogEntry e;
  e.seconds = static_cast<uint64_t>(ts.tv_sec);
  e.microseconds = static_cast<uint32_t>(ts.tv_nsec / 1000);
  return e;
}

}  // namespace

const size_t kMaxTriggers = HISTD_MAX_TRIGGERS;
const size_t kMaxSyntheticEvents = HISTD_MAX_SYNTHETIC;

Engine::Engine(catalog::Catalog catalog, runtime::Compiler compiler, EngineOptions options, Fd control)
    : catalog_(std::move(catalog)),
      compiler_(std::move(compiler)),
      options_(std::move(options)),
      control_(std::move(control)),
      slot_used_(HISTD_CONTROL_SLOTS, false),
      possible_cpus_(static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1))),
      trace_(options_.trace_buffer_size, true),
      snapshot_(options_.trace_buffer_size, true),
      passes_(std::make_unique<RingPasses>()) {}

Engine::~Engine() { shutdown(); }

Expected<std::unique_ptr<Engine>> Engine::create(catalog::Catalog catalog, runtime::Compiler compiler,
                                                 EngineOptions options) {
  if (options.max_triggers == 0 || options.max_triggers > kMaxTriggers)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the trigger limit must be from 1 to {}, not {}", kMaxTriggers, options.max_triggers));
  if (options.max_synthetic_events == 0 || options.max_synthetic_events > kMaxSyntheticEvents)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the synthetic event limit must be from 1 to {}, not {}", kMaxSyntheticEvents,
                            options.max_synthetic_events));
  if (options.max_map_memory == 0) return fail(ErrorKind::Invalid, EINVAL, "the map memory limit must not be 0");
  if (options.trace_buffer_size < 4096)
    return fail(ErrorKind::Invalid, EINVAL,
                fmt::format("the trace buffer must hold at least 4096 bytes, not {}", options.trace_buffer_size));
  auto control = runtime::create_map(BPF_MAP_TYPE_ARRAY, "histd_ctl", 4, sizeof(histd_trigger_control),
                                     HISTD_CONTROL_SLOTS);
  if (!control) return unexpected(std::move(control).error());
  auto ring = runtime::create_map(BPF_MAP_TYPE_RINGBUF, "histd_ring", 0, 0, 1u << 22);
  if (!ring) return unexpected(std::move(ring).error());
  auto lost = runtime::create_map(BPF_MAP_TYPE_PERCPU_ARRAY, "histd_lost", 4, 8, HISTD_LOST_SLOTS);
  if (!lost) return unexpected(std::move(lost).error());
  std::unique_ptr<Engine> engine(
      new Engine(std::move(catalog), std::move(compiler), std::move(options), std::move(*control)));
  engine->ring_ = std::move(*ring);
  engine->lost_ = std::move(*lost);
  // The resident compiler loads its libraries now, not on the first command.
  engine->compiler_.start_server();
  if (!engine->options_.defer_consumer) engine->start_consumer();
  return engine;
}

void Engine::start_consumer() {
  if (!consumer_.joinable()) {
    // Readers wait for its first pass from now on, not from when it runs.
    passes_->running(true);
    consumer_ = std::thread([this] { consume_ring(); });
  }
  // A thread too, so after daemonizing as well.
  compiler_.watch_server();
}

Engine::EventState& Engine::event_state(const std::string& system, const std::string& event) {
  auto& slot = events_[catalog::EventId{system, event}];
  if (!slot) {
    slot = std::make_unique<EventState>();
    slot->system = system;
    slot->event = event;
  }
  return *slot;
}

void Engine::log_error(const std::string& location, const Diagnostic& d) {
  readout::ErrorLogEntry e = stamped_entry();
  e.location = log_location_.empty() ? location : log_location_;
  e.diagnostic = d;
  error_log_.push_back(std::move(e));
  while (error_log_.size() > options_.error_log_entries) error_log_.pop_front();
}

CommandResult Engine::user_error(EventState& ev, Diagnostic d, int err) {
  log_error(fmt::format("hist:{}:{}", ev.system, ev.event), d);
  ev.last_error = d;
  return unexpected(CommandFailure{std::move(d), Error{err == EINVAL ? ErrorKind::Invalid : ErrorKind::Busy, err, {}}});
}

size_t Engine::trigger_count() const {
  size_t n = 0;
  for (const auto& [id, ev] : events_) n += ev->triggers.size() + ev->enables.size();
  return n;
}

uint64_t Engine::map_memory_in_use() const {
  std::set<const TableState*> tables;
  uint64_t bytes = 0;
  for (const auto& [id, ev] : events_)
    for (const auto& t : ev->triggers) {
      const plan::MapMemory m = plan::map_memory(t->plan, possible_cpus_);
      bytes += m.vars;
      if (tables.insert(t->table.get()).second) bytes += m.table + m.stats + m.hot;
    }
  return bytes;
}

std::optional<CommandResult> Engine::check_limits(EventState& ev, const std::string& command, size_t new_triggers,
                                                  Span trigger_span, uint64_t needs, Span memory_span) {
  const size_t triggers = trigger_count();
  if (triggers + new_triggers > options_.max_triggers) {
    std::string detail = fmt::format("the limit is {} and {} are in use", options_.max_triggers, triggers);
    if (new_triggers > 1) detail += fmt::format("; this command needs {} with its field variables", new_triggers);
    return user_error(ev, Diagnostic{ErrorCode::TriggerLimit, trigger_span, command, std::move(detail)}, ENOSPC);
  }
  const uint64_t in_use = map_memory_in_use();
  if (needs > options_.max_map_memory || in_use + needs > options_.max_map_memory)
    return user_error(ev,
                      Diagnostic{ErrorCode::MapMemoryLimit, memory_span, command,
                                 fmt::format("it needs {} bytes, {} of the {} bytes allowed are in use", needs,
                                             in_use, options_.max_map_memory)},
                      ENOSPC);
  return std::nullopt;
}

Expected<uint32_t> Engine::allocate_slot() {
  for (uint32_t i = 0; i < slot_used_.size(); ++i) {
    if (!slot_used_[i]) {
      slot_used_[i] = true;
      return i;
    }
  }
  return fail(ErrorKind::Busy, ENOSPC, fmt::format("no free control slot (there are {})", HISTD_CONTROL_SLOTS));
}

Status Engine::set_paused(uint32_t slot, bool paused) {
  histd_trigger_control c{paused ? 1u : 0u, 0};
  if (bpf_map_update_elem(control_.get(), &slot, &c, BPF_ANY) != 0) return fail_errno("updating trigger control");
  return ok_status();
}

void Engine::release_slot(uint32_t slot) {
  // A freed slot reads as paused with no firings left, so a stale program
  // can never count into it or fire through it.
  histd_trigger_control c{1, 0};
  bpf_map_update_elem(control_.get(), &slot, &c, BPF_ANY);
  slot_used_[slot] = false;
}

bool Engine::is_paused(uint32_t slot) const {
  histd_trigger_control c{};
  if (bpf_map_lookup_elem(control_.get(), &slot, &c) != 0) return false;
  return c.paused != 0;
}

void Engine::release_trigger(Trigger& t, Release how) {
  release_slot(t.slot);
  // The last trigger of a pinned table unpins it, except at shutdown: then
  // the pins keep the counts for the next start; nor when a command that
  // adopted a previous histd's table fails: the counts stay for a retry.
  const bool keep = shutting_down_ || (how == Release::Undo && t.table && t.table->adopted);
  if (t.table && t.table.use_count() == 1 && !keep) {
    std::error_code ec;
    for (const std::string& path : t.table->pin_paths()) std::filesystem::remove(path, ec);
  }
  t.table.reset();
}

Expected<std::shared_ptr<Engine::TableState>> Engine::acquire_table(const plan::HistPlan& plan) {
  if (plan.name) {
    auto it = named_tables_.find(*plan.name);
    if (it != named_tables_.end()) {
      if (auto existing = it->second.lock()) return existing;
    }
  }
  auto t = std::make_shared<TableState>();
  t->layout = plan;
  t->pin_base = pin_base(plan);
  if (adopt_pinned(*t)) {
    if (plan.name) named_tables_[*plan.name] = t;
    return t;
  }
  auto map = runtime::create_map(table_map_type(plan), "histd_table", plan.table_map_key_size(), plan.table_value_size(),
                                 plan.table_map_entries());
  if (!map) return unexpected(std::move(map).error());
  auto stats = runtime::create_map(BPF_MAP_TYPE_PERCPU_ARRAY, "histd_stats", 4, sizeof(histd_table_stats), 1);
  if (!stats) return unexpected(std::move(stats).error());
  t->map = std::move(*map);
  t->stats = std::move(*stats);
  if (plan.hot_slots > 0) {
    auto hot = create_hot_slots(plan);
    if (!hot) return unexpected(std::move(hot).error());
    t->hot = std::move(*hot);
  }
  auto pinned = pin_table(*t);
  if (!pinned) return unexpected(std::move(pinned).error());
  if (plan.name) named_tables_[*plan.name] = t;
  return t;
}

CommandResult Engine::write_trigger(const std::string& system, const std::string& event, std::string_view text) {
  std::lock_guard lock(mu_);
  return write_trigger_locked(system, event, text, parse::kMaxCommandBytes);
}

CommandResult Engine::write_trigger_locked(const std::string& system, const std::string& event,
                                           std::string_view text, size_t max_bytes, const std::string* config) {
  if (!catalog_.contains(system, event))
    return system_failure(Error{ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event)});
  EventState& ev = event_state(system, event);
  const std::string location = fmt::format("hist:{}:{}", system, event);
  if (auto room = reserve_state(text.size()); !room) {
    ev.last_error.reset();
    ++ev.generation;
    return finish_command(location, text, &ev, system_failure(std::move(room).error()));
  }
  const size_t triggers_before = ev.triggers.size(), enables_before = ev.enables.size();
  // The one parse of this write: what follows dispatches on its type.
  auto parsed = parse::parse_trigger(text, max_bytes);
  CommandResult r = Unit{};
  if (!parsed) {
    ev.last_error.reset();
    ++ev.generation;
    r = user_error(ev, std::move(parsed).error());
  } else if (auto* enable = std::get_if<parse::EnableHistCommand>(&*parsed)) {
    r = apply_enable(ev, std::move(*enable));
  } else {
    r = apply_hist(ev, std::get<parse::HistCommand>(*parsed));
  }
  if (r && config) mark_config(ev, triggers_before, enables_before, *config);
  return finish_command(location, text, &ev, std::move(r));
}

CommandResult Engine::finish_command(const std::string& location, std::string_view command, EventState* ev,
                                     CommandResult r) {
  auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  std::string cmd(command);
  while (!cmd.empty() && (cmd.back() == '\n' || cmd.back() == ' ' || cmd.back() == '\t')) cmd.pop_back();
  if (!r) {
    drop_state_room();
    // ENOENT and EBUSY refusals (removing what is not there or still in
    // use) are the kernel's silent ones: errno only, no error_log entry.
    const ErrorKind kind = r.error().error.kind;
    if (!r.error().diagnostic && kind != ErrorKind::NotFound && kind != ErrorKind::Busy) {
      // The whole text (a verifier log, clang's output) goes back to the
      // caller; error_log keeps tracefs's one-line shape.
      Diagnostic d{ErrorCode::CommandFailed, Span{0, 0}, cmd, first_line(r.error().error.context)};
      log_error(location, d);
      if (ev) ev->last_error = std::move(d);
    }
    return r;
  }
  if (auto st = save_state(); !st) {
    // Not expected once room was reserved; the change stays applied.
    Diagnostic d{ErrorCode::StateNotSaved, Span{0, 0}, cmd, st.error().context};
    log_error(location, d);
    if (ev) ev->last_error = std::move(d);
  }
  return r;
}

Status Engine::remove_trigger(EventState& ev, Trigger* going) {
  std::vector<Trigger*> rest;
  for (auto& t : ev.triggers)
    if (t.get() != going) rest.push_back(t.get());
  auto st = rebuild(ev, rest, enables_of(ev));
  if (!st) return st;
  release_trigger(*going);
  std::erase_if(ev.triggers, [&](const auto& t) { return t.get() == going; });
  refresh_enablers_of(ev);
  after_synth_removal(ev);
  return ok_status();
}

CommandResult Engine::apply_hist(EventState& ev, const parse::HistCommand& cmd) {
  // onmatch() params naming fields of the matching event need the kernel's
  // implicit field variables there first; they go again if this fails.
  std::vector<uint64_t> field_vars;
  auto made = add_field_vars(ev, cmd, field_vars);
  if (!made) return made;
  const size_t before = ev.triggers.size();
  CommandResult r = apply_hist_command(ev, cmd);
  const bool created = r && ev.triggers.size() > before;
  for (uint64_t uid : field_vars) {
    if (!created) {
      remove_trigger_uid(uid);
    } else if (Trigger* carrier = find_trigger(uid).second) {
      carrier->field_var_of = ev.triggers.back()->uid;
    }
  }
  return r;
}

CommandResult Engine::apply_hist_command(EventState& ev, const parse::HistCommand& cmd) {
  ev.last_error.reset();
  ++ev.generation;
  auto format = catalog_.event(ev.system, ev.event);
  if (!format) return system_failure(std::move(format).error());
  auto planned = pipeline::plan_command(cmd, **format, registry());
  if (!planned) return user_error(ev, std::move(planned).error());
  return apply_hist_plan(ev, cmd, std::move(*planned));
}

CommandResult Engine::apply_hist_plan(EventState& ev, const parse::HistCommand& cmd, plan::HistPlan plan) {
  const plan::TriggerKey key = plan::trigger_key(plan);
  auto found = std::find_if(ev.triggers.begin(), ev.triggers.end(),
                            [&](const auto& t) { return plan::trigger_key(t->plan) == key; });
  if (plan.remove) {
    // As in the kernel, removing a trigger that does not exist is not an error.
    if (found == ev.triggers.end()) return Unit{};
    return remove_hist(ev, found->get(), cmd.command);
  }
  if (found != ev.triggers.end()) return control_trigger(ev, **found, cmd, plan.control);
  if (plan.control == parse::Control::Continue || plan.control == parse::Control::Clear)
    return user_error(ev, Diagnostic{ErrorCode::TriggerEnoentClear, Span{0, 0}, cmd.command, {}});
  return add_trigger(ev, cmd, std::move(plan));
}

CommandResult Engine::remove_hist(EventState& ev, Trigger* going, const std::string& command) {
  if (auto user = referenced_by({going}))
    return user_error(ev, Diagnostic{ErrorCode::VarBusy, Span{0, 0}, command, "used by " + *user});
  const uint64_t uid = going->uid;
  auto st = remove_trigger(ev, going);
  if (!st) return system_failure(std::move(st).error());
  remove_field_vars_of(uid);
  return Unit{};
}

CommandResult Engine::control_trigger(EventState& ev, Trigger& t, const parse::HistCommand& cmd,
                                      parse::Control control) {
  switch (control) {
    case parse::Control::Pause:
    case parse::Control::Continue: {
      auto st = set_paused(t.slot, control == parse::Control::Pause);
      if (!st) return system_failure(std::move(st).error());
      return Unit{};
    }
    case parse::Control::Clear: {
      auto st = table::clear_table(t.table->fds(), table_shape(t.plan));
      if (!st) return system_failure(std::move(st).error());
      t.missed_base = event_missed(ev);  // Hits start over: so does Missed
      return Unit{};
    }
    case parse::Control::None:
      break;
  }
  return user_error(ev, Diagnostic{ErrorCode::TriggerEexist, Span{0, 0}, cmd.command, {}});
}

std::optional<Diagnostic> Engine::conflicts(const EventState& ev, const parse::HistCommand& cmd,
                                           const plan::HistPlan& plan) const {
  // Variable names are unique per event, across its triggers.
  for (const auto& t : ev.triggers)
    for (const plan::Variable& mine : plan.vars)
      for (const plan::Variable& theirs : t->plan.vars)
        if (mine.name == theirs.name) {
          const uint32_t pos = parse::errpos(cmd.command, mine.name);
          return Diagnostic{ErrorCode::DuplicateVar, Span{pos, pos + uint32_t(mine.name.size())}, cmd.command, {}};
        }
  // Synthetic events run their triggers when generated: a loop would never end.
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic)
    for (const plan::ActionPlan& a : plan.actions)
      if (!a.synth.empty() && (a.synth == ev.event || synth_reaches(a.synth, ev.event))) {
        const uint32_t pos = parse::errpos(cmd.command, a.synth);
        return Diagnostic{ErrorCode::SynthCycle, Span{pos, pos + uint32_t(a.synth.size())}, cmd.command, {}};
      }
  return std::nullopt;
}

CommandResult Engine::add_trigger(EventState& ev, const parse::HistCommand& cmd, plan::HistPlan plan) {
  // A new trigger. Named tables must agree with the table they join.
  bool joins_table = false;
  if (plan.name) {
    auto it = named_tables_.find(*plan.name);
    if (it != named_tables_.end()) {
      auto existing = it->second.lock();
      if (existing && !existing->layout.table_compatible(plan))
        return user_error(ev, Diagnostic{ErrorCode::NamedMismatch, cmd.name_span, cmd.command, {}});
      if (existing) {
        plan.max_entries = existing->layout.max_entries;
        plan.table_map = existing->layout.table_map;
      }
      joins_table = existing != nullptr;
    }
  }
  if (auto conflict = conflicts(ev, cmd, plan)) return user_error(ev, std::move(*conflict));
  // The limits, before any map exists: a trigger joining a named table
  // needs only its variable map.
  const plan::MapMemory memory = plan::map_memory(plan, possible_cpus_);
  if (auto refused = check_limits(ev, cmd.command, 1, Span{0, 0}, joins_table ? memory.vars : memory.total(),
                                  cmd.size ? cmd.size_span : Span{0, 0}))
    return *refused;
  Fd vars;
  if (plan.separate_var_map()) {
    auto m = runtime::create_map(BPF_MAP_TYPE_HASH, "histd_vars", plan.key_size, plan.var_record_size,
                                 plan.max_entries);
    if (!m) return system_failure(std::move(m).error());
    vars = std::move(*m);
  }
  auto table = acquire_table(plan);
  if (!table) return system_failure(std::move(table).error());
  auto slot = allocate_slot();
  if (!slot) return system_failure(std::move(slot).error());

  auto trigger = std::make_unique<Trigger>();
  trigger->plan = std::move(plan);
  trigger->uid = next_uid_++;
  trigger->vars = std::move(vars);
  trigger->table = std::move(*table);
  trigger->slot = *slot;
  auto st = set_paused(trigger->slot, trigger->plan.control == parse::Control::Pause);
  std::vector<Trigger*> all;
  for (auto& t : ev.triggers) all.push_back(t.get());
  all.push_back(trigger.get());
  trigger->missed_base = event_missed(ev);
  if (st) st = rebuild(ev, all, enables_of(ev));
  if (!st) {
    release_trigger(*trigger, Release::Undo);
    return rebuild_failure(ev, cmd.command, std::move(st).error());
  }
  ev.triggers.push_back(std::move(trigger));
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) {
    // The events generating this one run its triggers in their programs.
    auto generators = rebuild_generators(ev.event);
    if (!generators) {
      std::unique_ptr<Trigger> added = std::move(ev.triggers.back());
      ev.triggers.pop_back();
      (void)rebuild(ev, triggers_of(ev), enables_of(ev));
      (void)rebuild_generators(ev.event);
      release_trigger(*added, Release::Undo);
      return rebuild_failure(ev, cmd.command, std::move(generators).error());
    }
  }
  refresh_enablers_of(ev);
  if (catalog_.source(ev.system, ev.event) == catalog::EventSource::Synthetic) (void)refresh_synth(ev.event);
  return Unit{};
}

CommandResult Engine::truncate_triggers(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto it = events_.find(catalog::EventId{system, event});
  if (it == events_.end()) return Unit{};
  EventState& ev = *it->second;
  ++ev.generation;
  if (ev.triggers.empty() && ev.enables.empty()) return Unit{};
  // Opening the file with O_TRUNC is the command; the log shows it as such.
  const std::string location = fmt::format("hist:{}:{}", system, event);
  if (auto room = reserve_state(0); !room)
    return finish_command(location, "(truncate)", &ev, system_failure(std::move(room).error()));
  return finish_command(location, "(truncate)", &ev, truncate_all(ev));
}

CommandResult Engine::truncate_all(EventState& ev) {
  std::vector<const Trigger*> going;
  std::vector<uint64_t> uids;
  for (const auto& t : ev.triggers) {
    going.push_back(t.get());
    uids.push_back(t->uid);
  }
  if (auto user = referenced_by(going))
    return system_failure(Error{ErrorKind::Busy, EBUSY, "a variable of this event is used by " + *user});
  auto st = rebuild(ev, {}, {});
  if (!st) return system_failure(std::move(st).error());
  for (auto& t : ev.triggers) release_trigger(*t);
  ev.triggers.clear();
  for (auto& e : ev.enables) release_slot(e->slot);
  ev.enables.clear();
  refresh_enablers_of(ev);
  after_synth_removal(ev);
  for (uint64_t uid : uids) remove_field_vars_of(uid);
  return Unit{};
}

Usage Engine::usage() {
  std::lock_guard lock(mu_);
  Usage u;
  u.triggers = trigger_count();
  u.max_triggers = options_.max_triggers;
  u.synthetic_events = synths_.size();
  u.max_synthetic_events = options_.max_synthetic_events;
  u.map_memory = map_memory_in_use();
  u.max_map_memory = options_.max_map_memory;
  u.trace_buffer_size = options_.trace_buffer_size;
  u.possible_cpus = possible_cpus_;
  return u;
}

std::string Engine::event_source(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto it = events_.find(catalog::EventId{system, event});
  return it == events_.end() ? std::string() : it->second->source;
}

Expected<bool> Engine::inject(const std::string& system, const std::string& event, std::span<const uint8_t> record) {
  std::lock_guard lock(mu_);
  auto it = events_.find(catalog::EventId{system, event});
  if (it == events_.end() || !it->second->program) return false;
  auto rc = runtime::test_run(it->second->program->test_fd(), record);
  if (!rc) return unexpected(std::move(rc).error());
  if (*rc != 0) return fail(ErrorKind::Invalid, EINVAL, fmt::format("test entry rejected the record ({})", *rc));
  return true;
}

void Engine::shutdown() {
  // The consumer takes the lock for each batch: stop it before taking it here.
  stop_consumer_ = true;
  if (consumer_.joinable()) consumer_.join();
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  // Every slot paused first: a program still attached while the kernel
  // finishes its detach (runtime::Attachment) then counts and fires nothing,
  // so the dispatchers need not be emptied one by one.
  for (auto& [id, ev] : events_) {
    for (auto& t : ev->triggers) release_trigger(*t);
    for (auto& e : ev->enables) release_slot(e->slot);
  }
  for (auto& [id, ev] : events_) {
    if (ev->attachment) ev->attachment->keep_program_until_detached();
    ev->attachment.reset();
    ev->program.reset();
    ev->triggers.clear();
    ev->enables.clear();
  }
  events_.clear();
  named_tables_.clear();
}

}  // namespace histd::engine
