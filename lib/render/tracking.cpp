// SPDX-License-Identifier: GPL-2.0-only
// The per-entry text of onmax()/onchange() actions.
#include <fmt/printf.h>

#include <cstring>

#include "histd/render.h"

namespace histd::render {

namespace {

uint64_t word_at(std::span<const uint8_t> rec, uint32_t offset) {
  uint64_t v = 0;
  if (offset + 8 <= rec.size()) std::memcpy(&v, rec.data() + offset, 8);
  return v;
}

std::string string_at(std::span<const uint8_t> rec, uint32_t offset, uint32_t size) {
  if (offset >= rec.size()) return {};
  const size_t room = std::min<size_t>(size, rec.size() - offset);
  const char* p = reinterpret_cast<const char*>(rec.data() + offset);
  return std::string(p, strnlen(p, room));
}

}  // namespace

std::string render_tracking(const plan::HistPlan& plan, std::span<const uint8_t> record, const Options& options) {
  // Saved fields belong to the trigger, whichever action saved them.
  std::vector<const plan::SavedField*> saves;
  for (const plan::ActionPlan& a : plan.actions)
    for (const plan::SavedField& f : a.saves) saves.push_back(&f);
  std::string out;
  for (const plan::ActionPlan& a : plan.actions) {
    // The kernel's print_actions() leaves snapshot() actions out: their
    // trace is the snapshot block under the table.
    if (a.handler == parse::Action::Handler::OnMatch || a.kind == parse::Action::Kind::Snapshot) continue;
    // The tracked maximum or last value is one value of its variable.
    const table::AddressKind kind = a.track_var >= 0 && static_cast<size_t>(a.track_var) < plan.vars.size()
                                        ? plan::address_kind(plan.vars[static_cast<size_t>(a.track_var)].expr)
                                        : table::AddressKind::None;
    const auto v = static_cast<unsigned long long>(shown(word_at(record, a.track_offset), kind, options));
    out += fmt::sprintf(a.handler == parse::Action::Handler::OnMax ? "\n\tmax: %10llu" : "\n\tchanged: %10llu", v);
    for (const plan::SavedField* f : saves) {
      if (f->is_string)
        out += fmt::sprintf("  %s: %-32s", f->name, string_at(record, f->offset, f->size));
      else
        out += fmt::sprintf(
            "  %s: %10llu", f->name,
            static_cast<unsigned long long>(shown(word_at(record, f->offset), plan::address_kind(f->access), options)));
    }
  }
  return out;
}

}  // namespace histd::render
