// SPDX-License-Identifier: GPL-2.0-only
// An eprobe's dynamic_events line, read as the kernel's
// __trace_eprobe_create() reads it: the same checks in the same order, each
// refusal at the kernel's position in the logged command (the words joined
// by one blank). Whether the attached event and its fields exist is the
// registry's to check (it has the catalog).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "histd/probe.h"
#include "histd/text.h"

namespace histd::probe {

namespace {

struct Word {
  std::string_view text;
  uint32_t at = 0;  // where it starts in the logged command
};

// The line without its '#' comment, split at white space; the logged
// command is the words joined by one blank (trace_probe_log's argv).
std::pair<std::vector<Word>, std::string> words_of(std::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<Word> words;
  std::string command;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const size_t begin = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i == begin) break;
    if (!command.empty()) command += ' ';
    words.push_back(Word{line.substr(begin, i - begin), static_cast<uint32_t>(command.size())});
    command += line.substr(begin, i - begin);
  }
  return {std::move(words), std::move(command)};
}

struct Failure {
  ErrorCode code;
  uint32_t at;
  uint32_t length = 1;
  std::string detail;
};

// is_good_name(): a C identifier.
bool good_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// is_good_system_name(): letters, digits and '_'.
bool good_system_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// traceprobe_parse_event_name(): "[GRP/|GRP.]EVENT" at `at`.
std::optional<Failure> parse_event_name(std::string_view name, uint32_t at, std::string& group, std::string& event) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) slash = name.find('.');
  if (slash != std::string_view::npos) {
    if (slash == 0) return Failure{ErrorCode::ProbeNoGroupName, at};
    if (slash + 1 > kMaxNameLength + 1) return Failure{ErrorCode::ProbeGroupTooLong, at};
    if (!good_system_name(name.substr(0, slash))) return Failure{ErrorCode::ProbeBadGroupName, at};
    group = std::string(name.substr(0, slash));
    at += static_cast<uint32_t>(slash + 1);
    name = name.substr(slash + 1);
  }
  if (name.empty()) {
    if (slash != std::string_view::npos) return std::nullopt;  // "GRP/": the name is made up
    return Failure{ErrorCode::ProbeNoEventName, at};
  }
  if (name.size() > kMaxNameLength) return Failure{ErrorCode::ProbeEventTooLong, at};
  if (!good_name(name)) return Failure{ErrorCode::ProbeBadEventName, at};
  event = std::string(name);
  return std::nullopt;
}

bool is_string_type(std::string_view t) { return t == "string" || t == "ustring"; }

// One [NAME=]FETCHARG[:TYPE] (traceprobe_parse_probe_arg()), the i-th.
std::optional<Failure> parse_arg(const Word& w, size_t i, Define& out, std::set<std::string>& names) {
  catalog::ProbeDefinition& d = out.def;
  std::string_view text = w.text;
  std::string name = fmt::format("arg{}", i + 1);
  const size_t eq = text.find('=');
  uint32_t body_at = w.at;
  if (eq != std::string_view::npos) {
    if (eq > kMaxArgNameLength) return Failure{ErrorCode::ProbeArgNameTooLong, w.at};
    if (eq == 0) return Failure{ErrorCode::ProbeNoArgName, w.at};
    name = std::string(text.substr(0, eq));
    body_at += static_cast<uint32_t>(eq + 1);
  }
  if (!good_name(name)) return Failure{ErrorCode::ProbeBadArgName, w.at};
  if (names.count(name)) return Failure{ErrorCode::ProbeUsedArgName, w.at};
  const std::string_view body = eq == std::string_view::npos ? text : text.substr(eq + 1);
  if (body.empty()) return Failure{ErrorCode::ProbeNoArgBody, body_at};
  auto parsed = catalog::parse_probe_arg(name + "=" + std::string(body));
  if (!parsed) {
    const size_t colon = body.rfind(':');
    const bool type_part = colon != std::string_view::npos && body.find(')', colon) == std::string_view::npos &&
                           parsed.error().context.find(", not ") != std::string::npos;
    if (type_part) return Failure{ErrorCode::ProbeBadType, body_at + static_cast<uint32_t>(colon + 1)};
    return Failure{ErrorCode::ProbeBadFetchArg, body_at, 1, parsed.error().context};
  }
  catalog::ProbeArg& a = *parsed;
  using Base = catalog::ProbeFetch::Base;
  // An event's record has no registers, stack or return value.
  if (a.fetch.base != Base::EventField && a.fetch.base != Base::Comm && a.fetch.base != Base::Immediate)
    return Failure{ErrorCode::ProbeBadFetchArg, body_at, 1, "an eprobe fetches $FIELD, $comm or an immediate"};
  if (a.fetch.base == Base::Comm && !a.fetch.derefs.empty()) return Failure{ErrorCode::ProbeBadFetchArg, body_at};
  if (a.fetch.base == Base::Comm && !a.fetch.type.empty() && !is_string_type(a.fetch.type))
    return Failure{ErrorCode::ProbeNeedStringType, body_at};
  // A string is read at an address: a dereference's, or a field's value
  // (a string field's text).
  if (is_string_type(a.fetch.type) && a.fetch.derefs.empty() && a.fetch.base != Base::Comm &&
      a.fetch.base != Base::EventField)
    return Failure{ErrorCode::ProbeBadString, body_at};
  names.insert(name);
  d.args.push_back(std::move(a));
  out.arg_texts.emplace_back(body);
  out.arg_at.push_back(body_at);
  return std::nullopt;
}

// "-:[GRP/]EVENT" (dyn_events_release_all's single form).
Result<ProbeCommand, Diagnostic> parse_remove(const std::vector<Word>& words, std::string command) {
  const std::string_view head = words[0].text;
  Remove r;
  const std::string_view name = head.substr(2);
  if (const size_t slash = name.find('/'); slash != std::string_view::npos) {
    r.group = std::string(name.substr(0, slash));
    r.event = std::string(name.substr(slash + 1));
  } else {
    r.event = std::string(name);
  }
  if (head.size() < 2 || head[1] != ':' || r.event.empty())
    return unexpected(Diagnostic{ErrorCode::ProbeNoEventName, {0, 1}, std::move(command), {}});
  return ProbeCommand{std::move(r), std::move(command)};
}

Result<ProbeCommand, Diagnostic> parse_define(const std::vector<Word>& words, std::string command) {
  auto refuse = [&](const Failure& f) {
    return unexpected(Diagnostic{f.code, {f.at, f.at + f.length}, command, f.detail});
  };
  const std::string_view head = words[0].text;
  Define out;
  catalog::ProbeDefinition& d = out.def;
  d.eprobe = true;
  d.group = std::string(kEprobeGroup);
  if (head.size() > 1 && head[1] != ':') return unexpected(Diagnostic{ErrorCode::UnknownCommand, {0, 1}, command, {}});
  if (head.size() > 1) {  // "e:[GRP/]EVENT": a name, if only "GRP/"
    if (auto f = parse_event_name(head.substr(2), 2, d.group, d.event)) return refuse(*f);
  }
  // SYSTEM.EVENT (or SYSTEM/EVENT): both, or NO_EVENT_INFO.
  if (words.size() < 2) return refuse({ErrorCode::ProbeNoEventInfo, static_cast<uint32_t>(head.size())});
  const Word& attached = words[1];
  if (parse_event_name(attached.text, attached.at, d.attached_system, d.attached_event) || d.attached_system.empty() ||
      d.attached_event.empty())
    return refuse({ErrorCode::ProbeNoEventInfo, attached.at});
  if (d.event.empty()) d.event = d.attached_event;
  size_t end = words.size();
  for (size_t i = 2; i < words.size(); ++i) {
    if (words[i].text != "if") continue;
    // The rest is a filter on the attached event (the registry types it).
    if (i + 1 == words.size())
      return refuse({ErrorCode::ProbeNoEpFilter, static_cast<uint32_t>(command.size()), 1, {}});
    out.filter_at = words[i + 1].at;
    out.filter = command.substr(out.filter_at);
    end = i;
    break;
  }
  if (end - 2 > kMaxArgs)
    return unexpected(Diagnostic{ErrorCode::ProbeTooManyArgs, {words[2].at, words[2].at + 1}, command, {}});
  std::set<std::string> names;
  for (size_t i = 2; i < end; ++i)
    if (auto f = parse_arg(words[i], i - 2, out, names)) return refuse(*f);
  return ProbeCommand{std::move(out), std::move(command)};
}

}  // namespace

Result<ProbeCommand, Diagnostic> parse_probe_command(std::string_view line) {
  if (line.size() >= 4096)  // a page, as trigger commands
    return unexpected(Diagnostic{ErrorCode::CommandTooLong, {0, 1}, std::string(line.substr(0, 64)), {}});
  auto [words, command] = words_of(line);
  if (words.empty()) return unexpected(Diagnostic{ErrorCode::EmptyCommand, {}, {}, {}});
  const char kind = words[0].text[0];
  if (kind == '-') return parse_remove(words, std::move(command));
  if (kind != 'e') return unexpected(Diagnostic{ErrorCode::UnknownCommand, {0, 1}, std::move(command), {}});
  return parse_define(words, std::move(command));
}

std::string arg_type(const catalog::ProbeArg& arg) {
  if (!arg.fetch.type.empty()) return arg.fetch.type;
  return arg.fetch.base == catalog::ProbeFetch::Base::Comm ? "string" : "x64";
}

}  // namespace histd::probe
