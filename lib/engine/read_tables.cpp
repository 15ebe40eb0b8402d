// Reading an event's tables: what the engine's lock guards is copied under
// it; the maps are read and the text rendered after it, so that a command
// (which takes the lock) never waits for a big table's read and rendering.
#include <fcntl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "engine/engine_state.h"
#include "histd/engine.h"
#include "histd/render.h"
#include "histd/table_reader.h"

namespace histd::engine {

namespace {

// An fd of the same map, for use after the engine's lock: the trigger may
// be removed meanwhile, closing its own fd (and a new map may get the number).
Fd dup_fd(int fd) { return Fd(fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

// The block an onmax()/onchange() .snapshot() adds below the entries, for
// the last snapshot taken: its value and the key of the entry that took it.
std::string snapshot_block(const plan::HistPlan& plan, uint64_t value, std::span<const uint8_t> key_bytes,
                           const table::Table& table, const render::Resolver& resolver,
                           const render::Options& options) {
  std::string out;
  for (const plan::ActionPlan& a : plan.actions) {
    if (a.kind != parse::Action::Kind::Snapshot) continue;
    std::vector<uint8_t> key(key_bytes.begin(), key_bytes.end());
    key.resize(plan.key_size);
    const table::Row key_row{key, {}, {}, {}};
    // The tracked variable's value, hidden as its type says.
    const table::AddressKind kind = a.track_var >= 0 && size_t(a.track_var) < plan.vars.size()
                                        ? table::address_kind(plan.vars[size_t(a.track_var)].expr.type)
                                        : table::AddressKind::None;
    out = fmt::format(
        "\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value {{ {}({}) }}: {:10}"
        "\ttriggered by event with key: {}\n",
        a.handler == parse::Action::Handler::OnMax ? "onmax" : "onchange", a.track_text,
        render::shown(value, kind, options), render::render_key(table, key_row, resolver, options));
  }
  return out;
}

}  // namespace

Expected<std::string> Engine::read_hist(const std::string& system, const std::string& event,
                                        const render::Options& options) {
  return read_tables(system, event, false, options);
}

Expected<std::string> Engine::read_hist_json(const std::string& system, const std::string& event,
                                             const render::Options& options) {
  return read_tables(system, event, true, options);
}

Expected<std::string> Engine::read_tables(const std::string& system, const std::string& event, bool json,
                                          const render::Options& options) {
  // One trigger's table as it was when the lock was held, with its own fds
  // (never a copy of the TableState: its use count says who shares it).
  struct Read {
    plan::HistPlan plan;
    Fd map, stats, hot, records;
    bool paused = false;
    std::optional<Trigger::Snapshot> snapshot;
    uint64_t missed = 0;  // events the kernel's recursion guard kept from it
  };
  std::vector<Read> reads;
  std::optional<Diagnostic> last_error;
  {
    std::lock_guard lock(mu_);
    if (!catalog_.contains(system, event))
      return fail(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event));
    auto it = events_.find(catalog::EventId{system, event});
    if (it == events_.end()) return json ? render::render_json(system + ":" + event, {}, resolver_) : std::string();
    for (const auto& t : it->second->triggers) {
      Read r{t->plan, dup_fd(t->table->map.get()), dup_fd(t->table->stats.get()),
             dup_fd(t->table->hot ? t->table->hot.get() : -1), Fd(), is_paused(t->slot), t->snapshot,
             trigger_missed(*it->second, *t)};
      if (t->record_map() >= 0 && plan::tracks_values(t->plan)) r.records = dup_fd(t->record_map());
      if (!r.map || !r.stats) return fail_errno("dup of a table's map");
      reads.push_back(std::move(r));
    }
    last_error = it->second->last_error;
  }
  std::vector<table::Table> tables;
  tables.reserve(reads.size());
  for (const Read& r : reads) {
    auto table = table::read_table({r.map.get(), r.stats.get(), r.hot ? r.hot.get() : -1}, table_shape(r.plan),
                                   r.plan.columns());
    if (!table) return unexpected(std::move(table).error());
    if (r.records) {
      // The record alone, or the table's entry with the record after the values.
      const uint32_t offset = r.plan.record_offset();
      std::vector<uint8_t> value(offset + r.plan.var_record_size);
      for (size_t e = 0; e < table->entries(); ++e) {
        std::fill(value.begin(), value.end(), 0);
        bpf_map_lookup_elem(r.records.get(), table->row(e).key.data(), value.data());
        table->set_tracking(e, render::render_tracking(r.plan, std::span(value).subspan(offset), options));
      }
    }
    tables.push_back(std::move(*table));
  }
  std::vector<render::Section> sections;
  for (size_t i = 0; i < tables.size(); ++i) {
    const Read& r = reads[i];
    render::Section section{r.plan.trigger_text() + (r.paused ? " [paused]" : " [active]"), &tables[i], {},
                            plan::map_memory(r.plan, possible_cpus_), r.missed};
    if (r.snapshot)
      section.after_entries = snapshot_block(r.plan, r.snapshot->value, r.snapshot->key, tables[i], resolver_, options);
    sections.push_back(std::move(section));
  }
  if (json) return render::render_json(system + ":" + event, sections, resolver_, options);
  std::string out = render::render_event(sections, resolver_, options);
  if (last_error) out += fmt::format("\nERROR: {}\n  Last command: {}\n\n", last_error->message(),
                                     last_error->printable_command());
  return out;
}

uint64_t Engine::version(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto it = events_.find(catalog::EventId{system, event});
  if (it == events_.end()) return 0;
  uint64_t v = it->second->generation;
  // enable_hist/disable_hist flip paused flags from BPF, which the hist
  // text shows ([active]/[paused]) and no command bumps: one bit per
  // trigger, above what counts of hits reach.
  uint64_t paused = 0;
  for (size_t n = 0; n < it->second->triggers.size(); ++n)
    if (is_paused(it->second->triggers[n]->slot)) paused |= uint64_t{1} << (n % 16);
  for (const auto& t : it->second->triggers) {
    std::vector<histd_table_stats> per_cpu(static_cast<size_t>(std::max(libbpf_num_possible_cpus(), 1)));
    uint32_t zero = 0;
    if (bpf_map_lookup_elem(t->table->stats.get(), &zero, per_cpu.data()) != 0) continue;
    for (const histd_table_stats& s : per_cpu) v += s.hits + s.drops;
  }
  return v ^ (paused << 48);
}

}  // namespace histd::engine
