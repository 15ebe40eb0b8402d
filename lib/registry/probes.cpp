// SPDX-License-Identifier: GPL-2.0-only
// histd's eprobes in the registry: defined and removed by dynamic_events
// lines, as the kernel's dyn_event
// commands do; one in use (triggers, enabled) is busy and stays.
#include <fmt/format.h>

#include "histd/registry.h"

namespace histd::registry {

namespace {

Refusal refusal(ErrorKind kind, int err, std::string what) {
  return Refusal{{}, Error{kind, err, std::move(what)}, {}, {}};
}

}  // namespace

Result<ProbeWrite, Diagnostic> ProbeWrite::parse(std::string_view line) {
  auto parsed = probe::parse_probe_command(line);
  if (!parsed) return unexpected(std::move(parsed).error());
  return ProbeWrite{std::move(*parsed)};
}

Result<std::optional<plan::TypedFilter>, Refusal> Registry::check_attached(const probe::Define& d,
                                                                           const std::string& command) const {
  auto refused = [](Diagnostic diagnostic) {
    return unexpected(Refusal{std::move(diagnostic), Error{ErrorKind::Invalid, EINVAL, {}}, {}, {}});
  };
  auto invalid = [&](ErrorCode code, uint32_t at, std::string detail) {
    return refused(Diagnostic{code, Span{at, at + 1}, command, std::move(detail)});
  };
  // The attached event is the second word.
  const uint32_t at = static_cast<uint32_t>(command.find(' ') + 1);
  const catalog::EventId attached{d.def.attached_system, d.def.attached_event};
  if (!exists(attached)) return invalid(ErrorCode::ProbeBadAttachEvent, at, {});
  // Its program runs at the attached event's tracepoint, or where the
  // synthetic event is generated.
  if (!catalog::source_traits(this->source(attached)).eprobe_target)
    return invalid(ErrorCode::ProbeBadAttachEvent, at,
                   "histd attaches eprobes to kernel tracepoints and synthetic events, not yet to probe or "
                   "ftrace events");
  auto format = this->format(attached);
  if (!format) return invalid(ErrorCode::ProbeBadAttachEvent, at, format.error().context);
  for (size_t i = 0; i < d.def.args.size(); ++i) {
    const catalog::ProbeFetch& f = d.def.args[i].fetch;
    if (f.base != catalog::ProbeFetch::Base::EventField || (*format)->find(f.symbol)) continue;
    // At the $FIELD, inside its dereferences.
    const size_t dollar = i < d.arg_texts.size() ? d.arg_texts[i].find('$') : 0;
    const uint32_t arg_at = i < d.arg_at.size() ? d.arg_at[i] : 0;
    return invalid(ErrorCode::ProbeBadVar, arg_at + static_cast<uint32_t>(dollar == std::string::npos ? 0 : dollar),
                   fmt::format("{}:{} has no field {}", attached.system, attached.name, f.symbol));
  }
  if (d.filter.empty()) return std::optional<plan::TypedFilter>();
  // A filter on the attached event's fields, as the kernel's
  // create_event_filter() on that event.
  auto filter = parse::parse_filter(d.filter, d.filter_at, command);
  if (!filter) return refused(std::move(filter).error());
  auto typed = plan::plan_filter(*filter, **format, command);
  if (!typed) return refused(std::move(typed).error());
  return std::optional<plan::TypedFilter>(std::move(*typed));
}

bool Registry::eprobe_on_synthetic(const catalog::EventId& event) const {
  auto e = eprobes_.find(event);
  return e != eprobes_.end() && e->second.def.def.attached_system == catalog::kSynthSystem;
}

bool Registry::probe_in_use(const catalog::EventId& event) const {
  if (enabled_.count(event)) return true;
  auto ev = events_.find(event);
  return ev != events_.end() && !ev->second.empty();
}

Result<Applied, Refusal> Registry::apply_probe(const ProbeWrite& w) const {
  Applied out{*this, {}};
  Registry& r = out.next;
  if (const auto* rm = std::get_if<probe::Remove>(&w.command.what)) {
    // "-:EVENT" names one in any group (the first, as the kernel's match).
    auto it = std::find_if(r.eprobes_.begin(), r.eprobes_.end(), [&](const auto& k) {
      return k.first.name == rm->event && (rm->group.empty() || k.first.system == rm->group);
    });
    if (it == r.eprobes_.end())
      return unexpected(refusal(ErrorKind::NotFound, ENOENT, "no eprobe " + w.command.command.substr(2)));
    const catalog::EventId id = it->first;
    if (probe_in_use(id))
      return unexpected(
          refusal(ErrorKind::Busy, EBUSY,
                  fmt::format("eprobe {}/{} is in use (it has triggers or is enabled)", id.system, id.name)));
    r.eprobes_.erase(it);
    r.events_.erase(id);
    out.changes.push_back(Change{Change::Kind::ProbeRemoved, id, 0, {}, {}});
    return out;
  }
  const probe::Define& d = std::get<probe::Define>(w.command.what);
  const catalog::EventId id{d.def.group, d.def.event};
  auto filter = check_attached(d, w.command.command);
  if (!filter) return unexpected(std::move(filter).error());
  // The kernel appends a probe of the same name and arguments to the event
  // (a multi-probe event); histd's events have one probe each.
  if (exists(id) || (id.system == catalog::kSynthSystem))
    return unexpected(Refusal{Diagnostic{ErrorCode::ProbeEventExist, Span{0, 1}, w.command.command, {}},
                              Error{ErrorKind::Invalid, EEXIST, {}},
                              {},
                              {}});
  r.eprobes_[id] = Eprobe{d, std::move(*filter), r.next_eprobe_id_++};
  out.changes.push_back(Change{Change::Kind::ProbeDefined, id, 0, {}, {}, w.command.command, {}});
  return out;
}

Result<Applied, Refusal> Registry::apply_probe_truncate() const {
  // All or none, as the kernel's dyn_events_release_all().
  for (const auto& [id, k] : eprobes_)
    if (probe_in_use(id))
      return unexpected(
          refusal(ErrorKind::Busy, EBUSY,
                  fmt::format("eprobe {}/{} is in use (it has triggers or is enabled)", id.system, id.name)));
  Applied out{*this, {}};
  for (const auto& [id, k] : eprobes_) {
    out.next.events_.erase(id);
    out.changes.push_back(Change{Change::Kind::ProbeRemoved, id, 0, {}, {}});
  }
  out.next.eprobes_.clear();
  return out;
}

}  // namespace histd::registry
