// enable_hist / disable_hist commands:
//   [!]enable_hist:<system>:<event>[:count] [if <filter>]
#include <cctype>

#include "histd/parse.h"
#include "parse/text.h"

namespace histd::parse {

namespace {

bool is_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

}  // namespace

Result<EnableHistCommand, Diagnostic> parse_enable_hist(std::string_view line, size_t max_bytes) {
  EnableHistCommand cmd;
  if (line.size() >= max_bytes) return unexpected(too_long(line, max_bytes));
  std::string_view text = trim(line);
  if (!text.empty() && text.front() == '!') {
    cmd.remove = true;
    text = trim(text.substr(1));
  }
  cmd.command = std::string(text);
  auto error = [&](ErrorCode code, size_t begin, size_t end) {
    return unexpected(Diagnostic{code, Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(end)}, cmd.command, {}});
  };
  std::string_view head = text;
  const size_t if_pos = find_filter_keyword(text);
  if (if_pos != std::string_view::npos) head = trim(text.substr(0, if_pos));

  size_t pos = 0;
  if (head.substr(0, 12) == "enable_hist:") {
    pos = 12;
  } else if (head.substr(0, 13) == "disable_hist:") {
    cmd.enable = false;
    pos = 13;
  } else {
    return error(ErrorCode::UnknownCommand, 0, head.size());
  }
  // system:event[:count]
  size_t colon = head.find(':', pos);
  if (colon == std::string_view::npos) return error(ErrorCode::SubsysNotFound, pos, head.size());
  cmd.system = std::string(head.substr(pos, colon - pos));
  cmd.system_span = Span{static_cast<uint32_t>(pos), static_cast<uint32_t>(colon)};
  if (!is_name(cmd.system)) return error(ErrorCode::InvalidSubsysEvent, pos, colon);
  pos = colon + 1;
  colon = head.find(':', pos);
  const size_t event_end = colon == std::string_view::npos ? head.size() : colon;
  cmd.event = std::string(head.substr(pos, event_end - pos));
  cmd.event_span = Span{static_cast<uint32_t>(pos), static_cast<uint32_t>(event_end)};
  if (!is_name(cmd.event)) return error(ErrorCode::InvalidSubsysEvent, pos, event_end);
  if (colon != std::string_view::npos) {
    std::string_view count = head.substr(colon + 1);
    cmd.count_span = Span{static_cast<uint32_t>(colon + 1), static_cast<uint32_t>(head.size())};
    // The trigger file prints the remaining count as "count=N" or "unlimited";
    // both read back.
    if (count.substr(0, 6) == "count=") count.remove_prefix(6);
    if (count != "unlimited") {
      if (count.empty() || count.size() > 10) return error(ErrorCode::InvalidSize, colon + 1, head.size());
      uint64_t n = 0;
      for (char c : count) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return error(ErrorCode::InvalidSize, colon + 1, head.size());
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      cmd.count = n;
    }
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
