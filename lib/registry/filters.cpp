// SPDX-License-Identifier: GPL-2.0-only
// Event filters in the registry: the `filter` files of an event and of a
// system, in the kernel's filter language, deciding which records an
// enabled event records. As the kernel's apply_event_filter() and
// apply_subsystem_event_filter(), apart from a filter with an error: the
// kernel drops the old filter and shows the error in the file; histd
// refuses it (error_log has the error and its caret) and changes nothing.
#include <fmt/format.h>

#include "histd/registry.h"

namespace histd::registry {

namespace {

Refusal refusal(ErrorKind kind, int err, std::string what) {
  return Refusal{{}, Error{kind, err, std::move(what)}, {}, {}};
}

Refusal invalid(Diagnostic d) { return Refusal{std::move(d), Error{ErrorKind::Invalid, EINVAL, {}}, {}, {}}; }

// The kernel strips the trailing blanks (the newline echo adds) in place
// and keeps the leading ones.
std::string_view without_trailing_blanks(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool clears(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  return text == "0";
}

}  // namespace

Result<Applied, Refusal> Registry::apply_filter(const EventFilter& f) const {
  if (!exists(f.event))
    return unexpected(
        refusal(ErrorKind::NotFound, ENOENT, fmt::format("no event {}:{}", f.event.system, f.event.name)));
  // Synthetic events are recorded where they are generated, by a path of
  // their own that takes no filter yet.
  if (f.event.system == catalog::kSynthSystem)
    return unexpected(invalid(Diagnostic{ErrorCode::Unsupported, Span{0, 0}, f.text,
                                         "filters on synthetic events (filter their generating trigger instead)"}));
  const std::string text(without_trailing_blanks(f.text));
  Applied out{*this, {}};
  if (clears(text)) {
    if (out.next.filters_.erase(f.event) == 0) return out;
  } else {
    auto parsed = parse::parse_filter(text, 0, text);
    if (!parsed) return unexpected(invalid(std::move(parsed).error()));
    auto format = this->format(f.event);
    if (!format) return unexpected(refusal(ErrorKind::NotFound, ENOENT, format.error().context));
    auto typed = plan::plan_filter(*parsed, **format, text);
    if (!typed) return unexpected(invalid(std::move(typed).error()));
    RecordFilter next{text, std::move(*typed)};
    if (auto it = filters_.find(f.event); it != filters_.end() && it->second == next) return out;
    out.next.filters_[f.event] = std::move(next);
  }
  out.changes.push_back(Change{Change::Kind::EventFiltered, f.event, 0, {}, {}, text, {}});
  return out;
}

Result<Applied, Refusal> Registry::apply_system_filter(const SystemFilter& f) const {
  if (f.system == catalog::kSynthSystem)
    return unexpected(invalid(Diagnostic{ErrorCode::Unsupported, Span{0, 0}, f.text,
                                         "filters on synthetic events (filter their generating trigger instead)"}));
  std::vector<catalog::EventId> events;
  for (const std::string& name : catalog_->live_events(f.system)) events.push_back({f.system, name});
  for (const auto& [id, probe] : eprobes_)
    if (id.system == f.system) events.push_back(id);
  if (events.empty()) return unexpected(refusal(ErrorKind::NotFound, ENODEV, fmt::format("no events in {}", f.system)));
  const std::string text(without_trailing_blanks(f.text));
  Applied out{*this, {}};
  std::optional<parse::Filter> parsed;
  if (!clears(text)) {
    auto p = parse::parse_filter(text, 0, text);
    if (!p) return unexpected(invalid(std::move(p).error()));
    parsed = std::move(*p);
  }
  bool any = !parsed;
  for (const catalog::EventId& id : events) {
    std::optional<RecordFilter> next;
    if (parsed)
      if (auto format = this->format(id))
        if (auto typed = plan::plan_filter(*parsed, **format, text)) {
          next = RecordFilter{text, std::move(*typed)};
          any = true;
        }
    auto was = filters_.find(id);
    if (was == filters_.end() ? !next : next && was->second == *next) continue;
    if (next)
      out.next.filters_[id] = std::move(*next);
    else
      out.next.filters_.erase(id);
    out.changes.push_back(Change{Change::Kind::EventFiltered, id, 0, {}, {}, text, {}});
  }
  if (!any) return unexpected(invalid(Diagnostic{ErrorCode::FilterBadSubsystem, Span{0, 1}, text, {}}));
  return out;
}

}  // namespace histd::registry
