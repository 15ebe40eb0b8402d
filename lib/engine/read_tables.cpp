// Reading an event's tables: what the engine's lock guards is copied under
// it; the maps are read after it (and rendered by the caller), so that a
// command (which takes the lock) never waits for a big table's read and
// rendering.
#include <fcntl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <algorithm>

#include "engine/deployer.h"
#include "histd/engine.h"
#include "histd/table_reader.h"

namespace histd::engine {

namespace {

// An fd of the same map, for use after the engine's lock: the trigger may
// be removed meanwhile, closing its own fd (and a new map may get the number).
Fd dup_fd(int fd) { return Fd(fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

// One trigger's table as it was when the lock was held, with its own fds
// (never a copy of the TableState: its use count says who shares it).
struct Read {
  readout::HistTable out;  // all but the table
  Fd map, stats, hot, records;
};

// Reads `r`'s maps into r.out.table, and each entry's variable record when
// the trigger keeps them.
Status read_maps(Read& r) {
  const plan::HistPlan& plan = r.out.plan;
  auto table = table::read_table({r.map.get(), r.stats.get(), r.hot ? r.hot.get() : -1}, table_shape(plan),
                                 plan.columns());
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

Expected<readout::EventHist> Engine::hist(const std::string& system, const std::string& event) {
  readout::EventHist out{system, event, {}, {}};
  std::vector<Read> reads;
  {
    std::lock_guard lock(mu_);
    if (!catalog_.contains(system, event))
      return fail(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", system, event));
    auto it = deployer_->events().find(catalog::EventId{system, event});
    if (it == deployer_->events().end()) return out;
    for (const auto& t : it->second->triggers) {
      Read r;
      r.out.plan = t->plan;
      r.out.paused = deployer_->is_paused(t->slot);
      r.out.memory = plan::map_memory(t->plan, possible_cpus_);
      r.out.missed = deployer_->trigger_missed(*it->second, *t);
      if (t->snapshot) r.out.snapshot = readout::SnapshotTaken{t->snapshot->value, t->snapshot->key};
      r.map = dup_fd(t->table->map.get());
      r.stats = dup_fd(t->table->stats.get());
      r.hot = dup_fd(t->table->hot ? t->table->hot.get() : -1);
      if (t->record_map() >= 0 && plan::tracks_values(t->plan)) r.records = dup_fd(t->record_map());
      if (!r.map || !r.stats) return fail_errno("dup of a table's map");
      reads.push_back(std::move(r));
    }
    out.last_error = it->second->last_error;
  }
  out.tables.reserve(reads.size());
  for (Read& r : reads) {
    if (auto st = read_maps(r); !st) return unexpected(std::move(st).error());
    out.tables.push_back(std::move(r.out));
  }
  return out;
}

uint64_t Engine::version(const std::string& system, const std::string& event) {
  std::lock_guard lock(mu_);
  auto it = deployer_->events().find(catalog::EventId{system, event});
  if (it == deployer_->events().end()) return 0;
  uint64_t v = it->second->generation;
  // enable_hist/disable_hist flip paused flags from BPF, which the hist
  // text shows ([active]/[paused]) and no command bumps: one bit per
  // trigger, above what counts of hits reach.
  uint64_t paused = 0;
  for (size_t n = 0; n < it->second->triggers.size(); ++n)
    if (deployer_->is_paused(it->second->triggers[n]->slot)) paused |= uint64_t{1} << (n % 16);
  for (const auto& t : it->second->triggers) {
    std::vector<histd_table_stats> per_cpu(static_cast<size_t>(std::max(libbpf_num_possible_cpus(), 1)));
    uint32_t zero = 0;
    if (bpf_map_lookup_elem(t->table->stats.get(), &zero, per_cpu.data()) != 0) continue;
    for (const histd_table_stats& s : per_cpu) v += s.hits + s.drops;
  }
  return v ^ (paused << 48);
}

}  // namespace histd::engine
