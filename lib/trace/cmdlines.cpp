// SPDX-License-Identifier: GPL-2.0-only
#include <fmt/format.h>

#include "histd/trace_buffer.h"

namespace histd::trace {

// The kernel fills slot 1 first (cmdline_idx starts at 0 and is
// advanced before use); so does this, for the same listing order.
Cmdlines::Cmdlines(size_t size) : slots_(std::clamp<size_t>(size, 1, kMaxSize)), next_(1 % slots_.size()) {}

void Cmdlines::save(uint32_t pid, std::string_view comm) {
  // The idle task is never saved, as the kernel's trace_save_cmdline().
  if (pid == 0) return;
  std::lock_guard lock(mu_);
  if (auto it = slot_of_.find(pid); it != slot_of_.end()) {
    slots_[it->second].comm.assign(comm);
    return;
  }
  Slot& slot = slots_[next_];
  if (slot.used) slot_of_.erase(slot.pid);
  slot = Slot{pid, std::string(comm), true};
  slot_of_[pid] = next_;
  next_ = (next_ + 1) % slots_.size();
}

std::string Cmdlines::text() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const Slot& slot : slots_)
    if (slot.used) out += fmt::format("{} {}\n", slot.pid, slot.comm);
  return out;
}

std::string Cmdlines::comm(uint32_t pid) const {
  std::lock_guard lock(mu_);
  auto it = slot_of_.find(pid);
  return it == slot_of_.end() ? std::string() : slots_[it->second].comm;
}

size_t Cmdlines::size() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

bool Cmdlines::resize(size_t size) {
  if (size == 0 || size > kMaxSize) return false;
  std::lock_guard lock(mu_);
  slots_.assign(size, Slot{});
  slot_of_.clear();
  next_ = 1 % size;
  return true;
}

}  // namespace histd::trace
