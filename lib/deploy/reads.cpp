// SPDX-License-Identifier: GPL-2.0-only
// KernelReads (histd/kernel_reads.h): what only the kernel knows, read as
// data for the engine: pause flags, enable counts, map ids, missed counts,
// an event's debug facts, and its tables.
#include <fcntl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "deploy/event_programs.h"
#include "deploy/kernel_objects.h"
#include "histd/kernel_reads.h"
#include "histd/plan_memory.h"
#include "histd/table_reader.h"

namespace histd::deploy {

namespace {

// An fd of the same map, for use after the engine's lock: the trigger may
// be removed meanwhile, closing its own fd (and a new map may get the number).
Fd dup_fd(int fd) { return Fd(fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

}  // namespace

KernelReads::KernelReads(const Kernel& kernel, const Events& events, const KernelObjects& objects,
                         const EventPrograms& programs, uint32_t possible_cpus)
    : kernel_(kernel), events_(events), objects_(objects), programs_(programs), possible_cpus_(possible_cpus) {}

// One trigger's table as it was when the lock was held, with its own fds
// (never a copy of the TableState: its use count says who shares it).
struct TableReads::Read {
  readout::HistTable out;  // all but the table
  Fd map, stats, hot, records;
};

TableReads::TableReads() = default;
TableReads::TableReads(TableReads&&) noexcept = default;
TableReads& TableReads::operator=(TableReads&&) noexcept = default;
TableReads::~TableReads() = default;

namespace {

// Reads `r`'s maps into r.out.table, and each entry's variable record when
// the trigger keeps them.
Status read_maps(TableReads::Read& r) {
  const plan::HistPlan& plan = r.out.plan;
  auto table =
      table::read_table({r.map.get(), r.stats.get(), r.hot ? r.hot.get() : -1}, table_shape(plan), plan.columns());
  if (!table) return unexpected(std::move(table).error());
  if (r.records) {
    // The record alone, or the table's entry with the record after the values.
    const uint32_t offset = plan.record_offset();
    std::vector<uint8_t> value(offset + plan.var_record_size);
    for (size_t e = 0; e < table->entries(); ++e) {
      std::fill(value.begin(), value.end(), 0);
      bpf_map_lookup_elem(r.records.get(), table->row(e).key.data(), value.data());
      table->set_record(e, std::span(value).subspan(offset));
    }
    r.out.tracked = true;
  }
  r.out.table = std::move(*table);
  return Unit{};
}

}  // namespace

Expected<std::vector<readout::HistTable>> read_tables(TableReads reads) {
  std::vector<readout::HistTable> out;
  out.reserve(reads.reads_.size());
  for (TableReads::Read& r : reads.reads_) {
    if (auto st = read_maps(r); !st) return unexpected(std::move(st).error());
    out.push_back(std::move(r.out));
  }
  return out;
}

Expected<TableReads> KernelReads::table_reads(const catalog::EventId& event) const {
  TableReads reads;
  const EventState* ev = find_event_in(events_, event);
  if (!ev) return reads;
  for (const auto& t : ev->triggers) {
    TableReads::Read r;
    r.out.plan = t->plan;
    r.out.paused = objects_.is_paused(t->slot);
    r.out.memory = plan::map_memory(t->plan, possible_cpus_);
    r.out.missed = trigger_missed(*ev, *t);
    if (t->snapshot) r.out.snapshot = readout::SnapshotTaken{t->snapshot->value, t->snapshot->key};
    r.map = dup_fd(t->table->map.get());
    r.stats = dup_fd(t->table->stats.get());
    r.hot = dup_fd(t->table->hot ? t->table->hot.get() : -1);
    if (t->record_map() >= 0 && plan::tracks_values(t->plan)) r.records = dup_fd(t->record_map());
    if (!r.map || !r.stats) return fail_errno("dup of a table's map");
    reads.reads_.push_back(std::move(r));
  }
  return reads;
}

uint64_t KernelReads::activity(const catalog::EventId& event) const {
  const EventState* ev = find_event_in(events_, event);
  if (!ev) return 0;
  uint64_t v = 0;
  // enable_hist/disable_hist flip paused flags from BPF, which the hist
  // text shows ([active]/[paused]) and no command bumps: one bit per
  // trigger, above what counts of hits reach.
  uint64_t paused = 0;
  for (size_t n = 0; n < ev->triggers.size(); ++n)
    if (objects_.is_paused(ev->triggers[n]->slot)) paused |= uint64_t{1} << (n % 16);
  std::vector<histd_table_stats> per_cpu(possible_cpus_);
  for (const auto& t : ev->triggers) {
    const uint32_t zero = 0;
    const std::span<uint8_t> out(reinterpret_cast<uint8_t*>(per_cpu.data()), per_cpu.size() * sizeof(per_cpu[0]));
    if (!kernel_.lookup(t->table->stats.get(), bytes_of(zero), out)) continue;
    for (const histd_table_stats& s : per_cpu) v += s.hits + histd_drops(&s);
  }
  return v ^ (paused << 48);
}

readout::EventDebug KernelReads::debug(const catalog::EventId& event) const {
  readout::EventDebug d;
  d.system = event.system;
  d.event = event.name;
  const EventState* ev = find_event_in(events_, event);
  if (!ev) return d;
  d.possible_cpus = possible_cpus_;
  d.attached = ev->attachment != nullptr;
  const std::optional<catalog::EventId> on = programs_.eprobe_attached(*ev);
  d.tracepoint = on ? on->system + ":" + on->name : event.system + ":" + event.name;
  if (ev->syscall) {
    d.raw_syscall_nr = ev->syscall->nr;
    d.raw_syscall_exit = ev->syscall->exit;
  }
  d.btf_typed = ev->btf.has_value();
  // The fullest of its programs.
  d.maps_used = ev->maps_used;
  for (const ProgramGroup& g : ev->groups) d.maps_used = std::max(d.maps_used, g.maps_used);
  d.chained_programs = ev->groups.size();
  d.max_maps = kMaxMapsPerProgram;
  d.event_missed = event_missed(*ev);
  for (const auto& t : ev->triggers) {
    readout::DebugTable dt;
    dt.plan = t->plan;
    dt.paused = objects_.is_paused(t->slot);
    dt.table_map_id = kernel_.map_id(t->table->map.get());
    dt.memory = plan::map_memory(t->plan, possible_cpus_);
    if (t->plan.name && t->table.use_count() > 1) dt.shared_table = *t->plan.name;
    dt.missed = ev->attachment ? trigger_missed(*ev, *t) : 0;
    dt.program_maps = ev->maps_used;
    dt.program_triggers = ev->program_triggers.size();
    if (t->group >= 0 && size_t(t->group) < ev->groups.size()) {
      const ProgramGroup& g = ev->groups[t->group];
      dt.chain_slot = uint32_t(t->group + 1);
      dt.program_maps = g.maps_used;
      dt.program_triggers = g.members.size();
    }
    d.tables.push_back(std::move(dt));
  }
  return d;
}

bool KernelReads::paused(uint64_t uid) const {
  const Trigger* t = find_trigger_in(events_, uid).second;
  return t && objects_.is_paused(t->slot);
}

void KernelReads::add_maps(uint64_t uid, readout::TriggerInfo& info) const {
  const Trigger* t = find_trigger_in(events_, uid).second;
  if (!t) return;
  info.memory = plan::map_memory(t->plan, possible_cpus_);
  if (t->plan.name && t->table.use_count() > 1) info.shared_table = *t->plan.name;
  info.table_map_id = kernel_.map_id(t->table->map.get());
  info.stats_map_id = kernel_.map_id(t->table->stats.get());
  info.vars_map_id = t->vars ? kernel_.map_id(t->vars.get()) : 0;
  info.hot_map_id = t->table->hot ? kernel_.map_id(t->table->hot.get()) : 0;
}

uint64_t KernelReads::missed_base(uint64_t uid) const {
  const Trigger* t = find_trigger_in(events_, uid).second;
  return t ? t->missed_base : 0;
}

std::vector<EventMissed> KernelReads::missed() const {
  std::vector<EventMissed> out;
  for (const auto& [id, ev] : events_)
    if (ev->attachment) out.push_back(EventMissed{id.system, id.name, event_missed(*ev)});
  return out;
}

std::string KernelReads::source(const catalog::EventId& event) const {
  const EventState* ev = find_event_in(events_, event);
  if (!ev) return {};
  // Each program of the chain after the event program, marked with its slot.
  std::string out = ev->source;
  for (size_t g = 0; g < ev->groups.size(); ++g)
    out += fmt::format("{}/* histd: chain slot {} */\n{}", out.empty() ? "" : "\n", g + 1, ev->groups[g].source);
  return out;
}

std::string KernelReads::plans(const catalog::EventId& event) const {
  const EventState* ev = find_event_in(events_, event);
  std::string out;
  if (!ev) return out;
  for (const auto& t : ev->triggers) out += (out.empty() ? "" : "\n") + plan_of(t->plan);
  return out;
}

std::string KernelReads::plan_of(const plan::HistPlan& plan) { return plan::describe(plan); }

std::string KernelReads::control_line(const catalog::EventId& event, const parse::ControlCommand& cmd) const {
  // As the kernel's event_trigger_print() and event_enable_trigger_print():
  // the name (and target), the count its control word has left, the filter.
  std::string s(cmd.name());
  if (cmd.has_target()) s += fmt::format(":{}:{}", cmd.system, cmd.event);
  histd_trigger_control c{};
  c.count = HISTD_UNLIMITED;
  if (const EventState* ev = find_event_in(events_, event))
    for (const auto& e : ev->controls)
      if (e->cmd.same_type(cmd))
        if (auto word = objects_.read_control(e->slot)) c = *word;
  s += c.count == HISTD_UNLIMITED ? std::string(":unlimited") : fmt::format(":count={}", c.count);
  if (cmd.filter) s += " if " + cmd.filter->text;
  return s;
}

EventEnableState KernelReads::enable_state(const catalog::EventId& event) const {
  const EventState* ev = find_event_in(events_, event);
  if (!ev || !ev->record_slot) return {};
  return EventEnableState{!objects_.is_paused(*ev->record_slot), ev->soft_refs > 0};
}

}  // namespace histd::deploy
