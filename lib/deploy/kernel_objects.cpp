// SPDX-License-Identifier: GPL-2.0-only
// The deployer's shared kernel objects (KernelObjects): control slots,
// tables and their pins in bpffs (a restart re-adopts a pinned table of the
// same trigger and layout and keeps counting).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "deploy/control_words.h"
#include "deploy/kernel_objects.h"
#include "hist_shared.h"

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

// The maps of a plan's table.
Kernel::MapSpec table_spec(const plan::HistPlan& p) {
  return {table_map_type(p), "histd_table", p.table_map_key_size(), p.table_value_size(), p.table_map_entries()};
}
Kernel::MapSpec stats_spec() { return {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_stats", 4, sizeof(histd_table_stats), 1}; }
// The hot slots in front of a plan's table (plan::HistPlan::hot_slots > 0).
Kernel::MapSpec hot_spec(const plan::HistPlan& p) {
  return {BPF_MAP_TYPE_PERCPU_ARRAY, "histd_hot", 4, p.hot_value_size(), p.hot_slots};
}

}  // namespace

KernelObjects::KernelObjects(Kernel& kernel, Fd control, std::filesystem::path pin_dir)
    : kernel_(kernel),
      control_(std::move(control)),
      slot_used_(HISTD_CONTROL_SLOTS, false),
      pin_dir_(std::move(pin_dir)) {
  // Tracing's own slots are never a trigger's: tracing on, and
  // options/stacktrace off, as tracefs starts (set_event_pid's word is
  // EventPids').
  slot_used_[HISTD_TRACING_SLOT] = slot_used_[HISTD_STACKTRACE_OPTION_SLOT] = true;
  slot_used_[HISTD_PID_FILTER_SLOT] = true;
  (void)set_paused(HISTD_STACKTRACE_OPTION_SLOT, true);
}

void KernelObjects::free_released() {
  for (uint32_t slot : released_in_batch_) slot_used_[slot] = false;
  released_in_batch_.clear();
}

std::string KernelObjects::pin_base(const plan::HistPlan& plan) const {
  if (pin_dir_.empty()) return {};
  // Named tables are one table whoever uses them; others belong to their
  // trigger (its identity ignores the size, the layout check does not).
  const std::string id =
      plan.name ? "name:" + *plan.name : fmt::format("{}:{}:{}", plan.system, plan.event, plan.identity());
  return (pin_dir_ / fmt::format("{:016x}", fnv1a(id))).string();
}

// A raw-tracepoint or BTF-typed attachment pins under its own name: a histd
// restarted with the other kind attaches afresh, and sweep_pins() drops the
// old pair.
std::string KernelObjects::event_pin_base(const EventState& ev, const std::optional<catalog::SyscallEvent>& syscall,
                                          bool btf) const {
  if (pin_dir_.empty()) return {};
  const char* kind = syscall ? "-raw" : btf ? "-btf" : "";
  return (pin_dir_ / fmt::format("event-{:016x}{}", fnv1a(ev.system + ":" + ev.event), kind)).string();
}

void KernelObjects::sweep_pins(const std::map<catalog::EventId, std::unique_ptr<EventState>>& events) {
  if (pin_dir_.empty()) return;
  std::set<std::string> used;
  for (const auto& [id, ev] : events) {
    if (ev->attachment && !ev->attachment->pin_base().empty()) {
      used.insert(ev->attachment->pin_base() + "_link");
      used.insert(ev->attachment->pin_base() + "_slots");
    }
    for (const auto& t : ev->triggers)
      for (const std::string& path : t->table->pin_paths()) used.insert(path);
  }
  // Not its directories: the tree's instances pin there.
  for (const std::string& path : kernel_.pins(pin_dir_))
    // Unpinning a stale link detaches its program.
    if (!used.count(path)) kernel_.unpin(path);
}

void KernelObjects::unpin_table(const TableState& t) {
  for (const std::string& path : t.pin_paths()) kernel_.unpin(path);
}

Expected<Fd> KernelObjects::create_hot_slots(const plan::HistPlan& p) { return kernel_.create_map(hot_spec(p)); }

bool KernelObjects::adopt_pinned(TableState& t) {
  if (t.pin_base.empty()) return false;
  auto map = kernel_.open_pinned(t.pin_base + "_table", table_spec(t.layout));
  auto stats = kernel_.open_pinned(t.pin_base + "_stats", stats_spec());
  if (!map || !stats) return false;
  Fd hot;
  if (t.layout.hot_slots > 0) {
    auto pinned = kernel_.open_pinned(t.pin_base + "_hot", hot_spec(t.layout));
    if (pinned) {
      hot = std::move(*pinned);
    } else {
      // Pinned by a histd without hot slots (or with others): the table's
      // counts are all in the hash and stats; the slots start empty.
      auto fresh = create_hot_slots(t.layout);
      if (!fresh) return false;
      hot = std::move(*fresh);
      kernel_.unpin(t.pin_base + "_hot");
      if (!kernel_.pin(hot.get(), t.pin_base + "_hot")) return false;
    }
  }
  t.map = std::move(*map);
  t.stats = std::move(*stats);
  t.hot = std::move(hot);
  t.adopted = true;
  return true;
}

Status KernelObjects::pin_table(TableState& t) {
  if (t.pin_base.empty()) return ok_status();
  // A stale pin of another shape is replaced.
  unpin_table(t);
  Status st = kernel_.pin(t.map.get(), t.pin_base + "_table");
  if (st) st = kernel_.pin(t.stats.get(), t.pin_base + "_stats");
  if (st && t.hot) st = kernel_.pin(t.hot.get(), t.pin_base + "_hot");
  if (!st) {
    // None of them, rather than some: the table goes with the command.
    unpin_table(t);
    const int e = st.error().err;
    return fail(ErrorKind::System, e, "pinning a table under " + pin_dir_.string() + ": " + std::strerror(e));
  }
  return ok_status();
}

Expected<uint32_t> KernelObjects::allocate_slot() {
  for (uint32_t i = 0; i < slot_used_.size(); ++i) {
    if (!slot_used_[i]) {
      slot_used_[i] = true;
      return i;
    }
  }
  return fail(ErrorKind::Busy, ENOSPC, fmt::format("no free control slot (there are {})", HISTD_CONTROL_SLOTS));
}

Status KernelObjects::write_control(uint32_t slot, const histd_trigger_control& c) {
  auto st = kernel_.update(control_.get(), bytes_of(slot), bytes_of(c));
  if (!st) {
    const int e = st.error().err;
    return fail(ErrorKind::System, e, std::string("updating trigger control: ") + std::strerror(e));
  }
  return ok_status();
}

std::optional<histd_trigger_control> KernelObjects::read_control(uint32_t slot) const {
  histd_trigger_control c{};
  if (!kernel_.lookup(control_.get(), bytes_of(slot), bytes_of(c))) return std::nullopt;
  return c;
}

Status KernelObjects::set_paused(uint32_t slot, bool paused) { return write_control(slot, paused_word(paused)); }

void KernelObjects::release_slot(uint32_t slot) {
  // A freed slot reads as paused with no firings left, so a stale program
  // can never count into it or fire through it.
  (void)write_control(slot, histd_trigger_control{1, 0});
  // In a batch the program that ran through it may still be installed
  // (end_batch() loads its successor): a trigger made meanwhile must not
  // count through it.
  if (batching_) {
    released_in_batch_.push_back(slot);
    return;
  }
  slot_used_[slot] = false;
}

bool KernelObjects::is_paused(uint32_t slot) const {
  const std::optional<histd_trigger_control> c = read_control(slot);
  return c && c->paused != 0;
}

Expected<std::shared_ptr<TableState>> KernelObjects::acquire_table(const plan::HistPlan& plan) {
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
  auto map = kernel_.create_map(table_spec(plan));
  if (!map) return unexpected(std::move(map).error());
  auto stats = kernel_.create_map(stats_spec());
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
