// SPDX-License-Identifier: GPL-2.0-only
// The deployer's shared kernel objects (KernelObjects): control slots,
// tables and their pins in bpffs (a restart re-adopts a pinned table of the
// same trigger and layout and keeps counting).
#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>
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

KernelObjects::KernelObjects(Fd control, std::filesystem::path pin_dir)
    : control_(std::move(control)), slot_used_(HISTD_CONTROL_SLOTS, false), pin_dir_(std::move(pin_dir)) {
  // Tracing's own slots are never a trigger's: tracing on, and
  // options/stacktrace off, as tracefs starts.
  slot_used_[HISTD_TRACING_SLOT] = slot_used_[HISTD_STACKTRACE_OPTION_SLOT] = true;
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

// A raw-tracepoint attachment pins under its own name: a histd restarted
// with the other kind attaches afresh, and sweep_pins() drops the old pair.
std::string KernelObjects::event_pin_base(const EventState& ev,
                                          const std::optional<catalog::SyscallEvent>& syscall) const {
  if (pin_dir_.empty()) return {};
  return (pin_dir_ / fmt::format("event-{:016x}{}", fnv1a(ev.system + ":" + ev.event), syscall ? "-raw" : "")).string();
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
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(pin_dir_, ec)) {
    // A directory is not this deployer's (the tree's instances pin there).
    if (entry.is_directory(ec)) continue;
    // Unpinning a stale link detaches its program.
    if (!used.count(entry.path().string())) std::filesystem::remove(entry.path(), ec);
  }
}

bool KernelObjects::adopt_pinned(TableState& t) {
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

Status KernelObjects::pin_table(TableState& t) {
  if (t.pin_base.empty()) return ok_status();
  std::error_code ec;
  std::filesystem::create_directories(pin_dir_, ec);
  // A stale pin of another shape is replaced.
  for (const std::string& path : t.pin_paths()) std::filesystem::remove(path, ec);
  if (bpf_obj_pin(t.map.get(), (t.pin_base + "_table").c_str()) != 0 ||
      bpf_obj_pin(t.stats.get(), (t.pin_base + "_stats").c_str()) != 0 ||
      (t.hot && bpf_obj_pin(t.hot.get(), (t.pin_base + "_hot").c_str()) != 0))
    return fail_errno("pinning a table under " + pin_dir_.string());
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

Status KernelObjects::set_paused(uint32_t slot, bool paused) { return set_slot_paused(control_.get(), slot, paused); }

void KernelObjects::release_slot(uint32_t slot) {
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

bool KernelObjects::is_paused(uint32_t slot) const { return slot_paused(control_.get(), slot); }

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
