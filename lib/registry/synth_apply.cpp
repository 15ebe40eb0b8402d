// SPDX-License-Identifier: GPL-2.0-only
// The registry's decisions on synthetic_events: a definition, a removal,
// the file truncated, an event enabled.
#include <fmt/format.h>

#include "histd/registry.h"
#include "registry/work.h"

namespace histd::registry {

Work::Outcome Work::synth_line(const SynthWrite& w) {
  const std::string& name = w.command.definition.name;
  const Id id{std::string(catalog::kSynthSystem), name};
  if (w.command.remove) {
    if (!r.synths_.count(name)) return refused(ErrorKind::NotFound, ENOENT, "no synthetic event " + name);
    if (r.synth_in_use(name)) return refused(ErrorKind::Busy, EBUSY, "synthetic event " + name + " is in use");
    r.synths_.erase(name);
    r.events_.erase(id);
    changes.push_back(Change{Change::Kind::SynthRemoved, id, 0, {}, name});
    return std::nullopt;
  }
  // As __create_synth_event(): an existing name is EEXIST; histd's own limit is ENOSPC.
  const Span at_name{0, static_cast<uint32_t>(name.size())};
  if (r.exists(id))
    return Refusal{Diagnostic{ErrorCode::SynthEventExists, at_name, w.command.command, {}},
                   Error{ErrorKind::Invalid, EEXIST, {}},
                   {}};
  // Counted apart from triggers, against a limit of their own: each takes
  // two control slots, which once ran out for triggers with a bare ENOSPC.
  if (r.synths_.size() >= r.options_.limits.max_synthetic_events)
    return refused(Diagnostic{ErrorCode::SyntheticLimit, at_name, w.command.command,
                              fmt::format("the limit is {} and {} are defined", r.options_.limits.max_synthetic_events,
                                          r.synths_.size())},
                   ENOSPC);
  r.synths_[name] = Synthetic{w.command.definition, r.next_synth_id_++, false, w.config};
  changes.push_back(Change{Change::Kind::SynthDefined, id, 0, {}, name});
  return std::nullopt;
}

Work::Outcome Work::synth_truncate() {
  for (const auto& [name, s] : r.synths_)
    if (r.synth_in_use(name)) return refused(ErrorKind::Busy, EBUSY, "synthetic event " + name + " is in use");
  for (const auto& [name, s] : r.synths_) {
    const Id id{std::string(catalog::kSynthSystem), name};
    r.events_.erase(id);
    changes.push_back(Change{Change::Kind::SynthRemoved, id, 0, {}, name});
  }
  r.synths_.clear();
  return std::nullopt;
}

Work::Outcome Work::synth_enable(const SynthEnable& e) {
  auto s = r.synths_.find(e.name);
  if (s == r.synths_.end()) return refused(ErrorKind::NotFound, ENOENT, "no synthetic event " + e.name);
  s->second.enabled = e.on;
  changes.push_back(Change{e.on ? Change::Kind::SynthEnabled : Change::Kind::SynthDisabled,
                           Id{std::string(catalog::kSynthSystem), e.name},
                           0,
                           {},
                           e.name});
  return std::nullopt;
}

}  // namespace histd::registry
