// SPDX-License-Identifier: GPL-2.0-only
// The deployer's kernel objects: control slots, tables and their pins in
// bpffs (a restart re-adopts a pinned table of the same trigger and layout
// and keeps counting), and what the kernel imposes on the programs histd loads.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "deploy/control_words.h"
#include "deploy/state.h"
#include "hist_shared.h"
#include "histd/codegen.h"

namespace histd::deploy {

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// The map behind a pin, if its shape is the one wanted.
Fd open_pinned(const std::string& path, uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t max_entries) {
  Fd fd(bpf_obj_get(path.c_str()));
  if (!fd) return fd;
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0 || info.type != type || info.key_size != key_size ||
      info.value_size != value_size || info.max_entries != max_entries)
    return Fd();
  return fd;
}

}  // namespace

Deployer::Deployer(catalog::Catalog& catalog, runtime::Compiler& compiler, Options options, Fd control, Fd ring,
                   Fd lost, Log log)
    : catalog_(catalog),
      compiler_(compiler),
      options_(std::move(options)),
      possible_cpus_(static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1))),
      log_(std::move(log)),
      control_(std::move(control)),
      slot_used_(HISTD_CONTROL_SLOTS, false),
      probe_files_(catalog),
      ring_(std::make_unique<TraceRing>(
          std::move(ring), std::move(lost), control_.get(), possible_cpus_, options_.trace_buffer_size, resolver_,
          TraceRing::Notices{[this](uint32_t slot, uint64_t value, std::span<const uint8_t> key) {
                               return snapshot_notice(slot, value, key);
                             },
                             [this](uint32_t id) { return traced_synth(id); }})) {
  // Tracing's own slots are never a trigger's: tracing on, and
  // options/stacktrace off, as tracefs starts.
  slot_used_[HISTD_TRACING_SLOT] = slot_used_[HISTD_STACKTRACE_OPTION_SLOT] = true;
  (void)set_paused(HISTD_STACKTRACE_OPTION_SLOT, true);
}

Deployer::~Deployer() {
  ring_->stop_consumer();
  shutdown();
}

Expected<std::unique_ptr<Deployer>> Deployer::create(catalog::Catalog& catalog, runtime::Compiler& compiler,
                                                     Options options, Log log) {
  auto control =
      runtime::create_map(BPF_MAP_TYPE_ARRAY, "histd_ctl", 4, sizeof(histd_trigger_control), HISTD_CONTROL_SLOTS);
  if (!control) return unexpected(std::move(control).error());
  auto ring = runtime::create_map(BPF_MAP_TYPE_RINGBUF, "histd_ring", 0, 0, 1u << 22);
  if (!ring) return unexpected(std::move(ring).error());
  auto lost = runtime::create_map(BPF_MAP_TYPE_PERCPU_ARRAY, "histd_lost", 4, 8, HISTD_LOST_SLOTS);
  if (!lost) return unexpected(std::move(lost).error());
  // Every unit this deployer compiles opens with these lines: a histd-cc
  // started from now on learns them first (Compiler::set_prelude).
  compiler.set_prelude(codegen::kUnitPrelude);
  return std::unique_ptr<Deployer>(new Deployer(catalog, compiler, std::move(options), std::move(*control),
                                                std::move(*ring), std::move(*lost), std::move(log)));
}

CommandResult Deployer::user_error(EventState& ev, Diagnostic d, int err) {
  const catalog::EventId id{ev.system, ev.event};
  log_(&id, &d, {});
  return unexpected(CommandFailure{std::move(d), Error{err == EINVAL ? ErrorKind::Invalid : ErrorKind::Busy, err, {}}});
}

void Deployer::shutdown() {
  shutting_down_ = true;
  // Every slot paused first: a program still attached while the kernel
  // finishes its detach (runtime::Attachment) then counts and fires nothing,
  // so the dispatchers need not be emptied one by one.
  for (auto& [id, ev] : events_) {
    for (auto& t : ev->triggers) release_trigger(*t);
    for (auto& e : ev->controls) release_slot(e->slot);
    if (ev->record_slot) release_slot(*ev->record_slot);
  }
  for (auto& [id, ev] : events_) {
    if (ev->attachment) ev->attachment->keep_program_until_detached();
    ev->attachment.reset();
    ev->program.reset();
    ev->groups.clear();
    ev->triggers.clear();
    ev->controls.clear();
  }
  events_.clear();
  named_tables_.clear();
}

std::string Deployer::control_line(const catalog::EventId& event, const parse::ControlCommand& cmd) const {
  // As the kernel's event_trigger_print() and event_enable_trigger_print():
  // the name (and target), the count its control word has left, the filter.
  std::string s(cmd.name());
  if (cmd.has_target()) s += fmt::format(":{}:{}", cmd.system, cmd.event);
  histd_trigger_control c{};
  c.count = HISTD_UNLIMITED;
  if (const EventState* ev = find_event(event))
    for (const auto& e : ev->controls)
      if (e->cmd.same_type(cmd)) bpf_map_lookup_elem(control_.get(), &e->slot, &c);
  s += c.count == HISTD_UNLIMITED ? std::string(":unlimited") : fmt::format(":count={}", c.count);
  if (cmd.filter) s += " if " + cmd.filter->text;
  return s;
}

std::string Deployer::pin_base(const plan::HistPlan& plan) const {
  if (options_.pin_dir.empty()) return {};
  // Named tables are one table whoever uses them; others belong to their
  // trigger (its identity ignores the size, the layout check does not).
  const std::string id =
      plan.name ? "name:" + *plan.name : fmt::format("{}:{}:{}", plan.system, plan.event, plan.identity());
  return (options_.pin_dir / fmt::format("{:016x}", fnv1a(id))).string();
}

// A raw-tracepoint attachment pins under its own name: a histd restarted
// with the other kind attaches afresh, and sweep_pins() drops the old pair.
std::string Deployer::event_pin_base(const EventState& ev, const std::optional<catalog::SyscallEvent>& syscall) const {
  if (options_.pin_dir.empty()) return {};
  return (options_.pin_dir / fmt::format("event-{:016x}{}", fnv1a(ev.system + ":" + ev.event), syscall ? "-raw" : ""))
      .string();
}

void Deployer::sweep_pins() {
  if (options_.pin_dir.empty()) return;
  std::set<std::string> used;
  for (const auto& [id, ev] : events_) {
    if (ev->attachment && !ev->attachment->pin_base().empty()) {
      used.insert(ev->attachment->pin_base() + "_link");
      used.insert(ev->attachment->pin_base() + "_slots");
    }
    for (const auto& t : ev->triggers)
      for (const std::string& path : t->table->pin_paths()) used.insert(path);
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.pin_dir, ec)) {
    // A directory is not this deployer's (the tree's instances pin there).
    if (entry.is_directory(ec)) continue;
    // Unpinning a stale link detaches its program.
    if (!used.count(entry.path().string())) std::filesystem::remove(entry.path(), ec);
  }
}

bool Deployer::adopt_pinned(TableState& t) {
  if (t.pin_base.empty()) return false;
  Fd map = open_pinned(t.pin_base + "_table", table_map_type(t.layout), t.layout.table_map_key_size(),
                       t.layout.table_value_size(), t.layout.table_map_entries());
  Fd stats = open_pinned(t.pin_base + "_stats", BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(histd_table_stats), 1);
  if (!map || !stats) return false;
  Fd hot;
  if (t.layout.hot_slots > 0) {
    hot = open_pinned(t.pin_base + "_hot", BPF_MAP_TYPE_PERCPU_ARRAY, 4, t.layout.hot_value_size(), t.layout.hot_slots);
    if (!hot) {
      // Pinned by a histd without hot slots (or with others): the table's
      // counts are all in the hash and stats; the slots start empty.
      auto fresh = create_hot_slots(t.layout);
      if (!fresh) return false;
      hot = std::move(*fresh);
      std::error_code ec;
      std::filesystem::remove(t.pin_base + "_hot", ec);
      if (bpf_obj_pin(hot.get(), (t.pin_base + "_hot").c_str()) != 0) return false;
    }
  }
  t.map = std::move(map);
  t.stats = std::move(stats);
  t.hot = std::move(hot);
  t.adopted = true;
  return true;
}

Status Deployer::pin_table(TableState& t) {
  if (t.pin_base.empty()) return ok_status();
  std::error_code ec;
  std::filesystem::create_directories(options_.pin_dir, ec);
  // A stale pin of another shape is replaced.
  for (const std::string& path : t.pin_paths()) std::filesystem::remove(path, ec);
  if (bpf_obj_pin(t.map.get(), (t.pin_base + "_table").c_str()) != 0 ||
      bpf_obj_pin(t.stats.get(), (t.pin_base + "_stats").c_str()) != 0 ||
      (t.hot && bpf_obj_pin(t.hot.get(), (t.pin_base + "_hot").c_str()) != 0))
    return fail_errno("pinning a table under " + options_.pin_dir.string());
  return ok_status();
}

// Triggers come back one at a time, each rebuilding its event, but none of
// those programs is installed on the way: after a kill -9 the dispatcher
// adopted from the pins still runs the dead histd's programs, which count
// every trigger of the event into the same pinned tables. Installing the
// program of the first restored trigger would leave the event's other
// triggers uncounted until their own turn (a compile each). The event's
// programs go in at the end, its chain first and slot 0 last (install_all).
// Restored in creation order, the triggers are laid out as the dead histd
// had them, and each program replaces its twin; only where removals had
// left room that later triggers took may a trigger count in two programs
// for the moment between two slot writes.
void Deployer::install_restored(std::vector<std::string>& problems) {
  for (auto& [id, ev] : events_) {
    if (!ev->attachment || (!ev->program && ev->groups.empty())) continue;
    auto st = install_all(*ev);
    if (!st) problems.push_back(fmt::format("{}:{}: {}", id.system, id.name, st.error().context));
  }
}

uint64_t Deployer::event_missed(const EventState& ev) const {
  return (ev.attachment ? ev.attachment->missed() : 0) + (ev.program ? ev.program->missed() : 0);
}

uint64_t Deployer::trigger_missed(const EventState& ev, const Trigger& t) const {
  const uint64_t now = event_missed(ev);
  return now >= t.missed_base ? now - t.missed_base : now;
}

CommandResult Deployer::rebuild_failure(EventState& ev, const std::string& command, Error e) {
  // rebuild() says ENOSPC only for the maps of one program (see build()),
  // EMLINK for the programs of one event's chain (see layout()).
  if (e.kind == ErrorKind::Busy && e.err == ENOSPC)
    return user_error(ev, Diagnostic{ErrorCode::ProgramMapLimit, Span{0, 0}, command, std::move(e.context)}, ENOSPC);
  if (e.kind == ErrorKind::Busy && e.err == EMLINK)
    return user_error(ev, Diagnostic{ErrorCode::ChainLimit, Span{0, 0}, command, std::move(e.context)}, ENOSPC);
  return system_failure(std::move(e));
}

EventState& Deployer::event_state(const catalog::EventId& event) {
  auto& slot = events_[event];
  if (!slot) {
    slot = std::make_unique<EventState>();
    slot->system = event.system;
    slot->event = event.name;
  }
  return *slot;
}

const EventState* Deployer::find_event(const catalog::EventId& event) const {
  auto it = events_.find(event);
  return it == events_.end() ? nullptr : it->second.get();
}

Expected<uint32_t> Deployer::allocate_slot() {
  for (uint32_t i = 0; i < slot_used_.size(); ++i) {
    if (!slot_used_[i]) {
      slot_used_[i] = true;
      return i;
    }
  }
  return fail(ErrorKind::Busy, ENOSPC, fmt::format("no free control slot (there are {})", HISTD_CONTROL_SLOTS));
}

Status Deployer::set_paused(uint32_t slot, bool paused) { return set_slot_paused(control_.get(), slot, paused); }

void Deployer::release_slot(uint32_t slot) {
  // A freed slot reads as paused with no firings left, so a stale program
  // can never count into it or fire through it.
  histd_trigger_control c{1, 0};
  bpf_map_update_elem(control_.get(), &slot, &c, BPF_ANY);
  // In a batch the program that ran through it may still be installed
  // (end_batch() loads its successor): a trigger made meanwhile must not
  // count through it.
  if (batching_) {
    released_in_batch_.push_back(slot);
    return;
  }
  slot_used_[slot] = false;
}

bool Deployer::is_paused(uint32_t slot) const { return slot_paused(control_.get(), slot); }

void Deployer::release_trigger(Trigger& t, Release how) {
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

Expected<std::shared_ptr<TableState>> Deployer::acquire_table(const plan::HistPlan& plan) {
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
  auto map = runtime::create_map(table_map_type(plan), "histd_table", plan.table_map_key_size(),
                                 plan.table_value_size(), plan.table_map_entries());
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

}  // namespace histd::deploy
