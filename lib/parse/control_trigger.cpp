// SPDX-License-Identifier: GPL-2.0-only
// The control triggers (parse::ControlCommand):
//   [!]traceon[:count] [if <filter>]   (traceoff, snapshot, stacktrace alike)
//   [!]enable_event:<system>:<event>[:count] [if <filter>]
//   (disable_event, enable_hist, disable_hist alike)
#include <cctype>

#include "histd/parse.h"
#include "parse/text.h"

namespace histd::parse {

namespace {

using Kind = ControlCommand::Kind;

bool is_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// The kind a command starts with, and where its parameters begin (after
// its ':'; the end when it has none).
std::optional<std::pair<Kind, size_t>> kind_of(std::string_view head) {
  for (size_t k = 0; k < std::size(kControlTriggerNames); ++k) {
    const std::string_view name = kControlTriggerNames[k];
    if (!head.starts_with(name)) continue;
    const std::string_view rest = head.substr(name.size());
    if (rest.empty()) return std::pair{Kind(k), head.size()};
    if (rest.front() == ':') return std::pair{Kind(k), name.size() + 1};
  }
  return std::nullopt;
}

// ":count", ":count=N" or ":unlimited" (as the trigger file lists them, so
// that a listed line reads back); false on anything else.
bool parse_count(std::string_view count, ControlCommand& cmd) {
  if (count.substr(0, 6) == "count=") count.remove_prefix(6);
  if (count == "unlimited") return true;
  if (count.empty() || count.size() > 10) return false;
  uint64_t n = 0;
  for (char c : count) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  cmd.count = n;
  return true;
}

}  // namespace

std::string_view ControlCommand::name() const { return kControlTriggerNames[static_cast<size_t>(kind)]; }

bool ControlCommand::same_type(const ControlCommand& o) const {
  auto type = [](Kind k) {
    switch (k) {
      case Kind::TraceOff:
        return Kind::TraceOn;
      case Kind::DisableEvent:
        return Kind::EnableEvent;
      case Kind::DisableHist:
        return Kind::EnableHist;
      default:
        return k;
    }
  };
  if (type(kind) != type(o.kind)) return false;
  return !has_target() || (system == o.system && event == o.event);
}

Result<ControlCommand, Diagnostic> parse_control_trigger(std::string_view line, size_t max_bytes) {
  ControlCommand cmd;
  if (line.size() >= max_bytes) return unexpected(too_long(line, max_bytes));
  std::string_view text = trim(line);
  if (!text.empty() && text.front() == '!') {
    cmd.remove = true;
    text = trim(text.substr(1));
  }
  cmd.command = std::string(text);
  auto error = [&](ErrorCode code, size_t begin, size_t end) {
    return unexpected(
        Diagnostic{code, Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(end)}, cmd.command, {}});
  };
  std::string_view head = text;
  const size_t if_pos = find_filter_keyword(text);
  if (if_pos != std::string_view::npos) head = trim(text.substr(0, if_pos));

  const auto kind = kind_of(head);
  if (!kind) return error(ErrorCode::UnknownCommand, 0, head.size());
  cmd.kind = kind->first;
  size_t pos = kind->second;
  if (cmd.has_target()) {
    // system:event[:count]
    size_t colon = head.find(':', pos);
    if (pos >= head.size() || colon == std::string_view::npos)
      return error(ErrorCode::SubsysNotFound, pos, head.size());
    cmd.system = std::string(head.substr(pos, colon - pos));
    cmd.system_span = Span{static_cast<uint32_t>(pos), static_cast<uint32_t>(colon)};
    if (!is_name(cmd.system)) return error(ErrorCode::InvalidSubsysEvent, pos, colon);
    pos = colon + 1;
    colon = head.find(':', pos);
    const size_t event_end = colon == std::string_view::npos ? head.size() : colon;
    cmd.event = std::string(head.substr(pos, event_end - pos));
    cmd.event_span = Span{static_cast<uint32_t>(pos), static_cast<uint32_t>(event_end)};
    if (!is_name(cmd.event)) return error(ErrorCode::InvalidSubsysEvent, pos, event_end);
    pos = colon == std::string_view::npos ? head.size() : colon + 1;
  }
  if (pos < head.size() || (pos == head.size() && head.ends_with(':'))) {
    cmd.count_span = Span{static_cast<uint32_t>(pos), static_cast<uint32_t>(head.size())};
    if (!parse_count(head.substr(pos), cmd)) return error(ErrorCode::InvalidCount, pos, head.size());
  }
  if (if_pos != std::string_view::npos) {
    size_t fstart = if_pos + 2;
    while (fstart < text.size() && std::isspace(static_cast<unsigned char>(text[fstart]))) ++fstart;
    auto filter = parse_filter(text.substr(fstart), static_cast<uint32_t>(fstart), cmd.command);
    if (!filter) return unexpected(std::move(filter).error());
    cmd.filter = std::move(*filter);
  }
  return cmd;
}

}  // namespace histd::parse
