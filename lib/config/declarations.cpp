// SPDX-License-Identifier: GPL-2.0-only
// Parsing a configuration file into declarations (histd/config.h).
// Commands are parsed by the parsers the trigger file and synthetic_events
// use, so a line gets the errors and carets a write would get; this file
// adds only the line's shape (SYSTEM:EVENT, then the command) and what a
// declaration may not be (a removal, cont, clear).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <variant>

#include "histd/config.h"

#include "config/problem.h"
#include "histd/parse.h"
#include "histd/synth.h"
#include "histd/text.h"

namespace histd::config {

namespace {

using engine::ConfigItem;

// Bytes of a line a problem shows (the rest of a long line is cut).
constexpr size_t kShownBytes = 80;

Span span_of(size_t begin, size_t end) { return Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(end)}; }

// An event or system name as tracefs spells them.
bool is_event_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// The table size the kernel makes of size=N (128..131072, a power of two;
// 2048 by default), so that `size=2000` and `size=2048` are one shape. An
// out-of-range size stays as written: the engine refuses it.
std::string size_shape(const parse::HistCommand& cmd) {
  if (!cmd.size) return "2048";
  const uint64_t n = *cmd.size;
  if (n == 0 || n > (uint64_t{1} << 17)) return std::to_string(n);
  return std::to_string(std::max<uint64_t>(std::bit_ceil(n), 128));
}

// "sched.sched_waking.$ts0", "$ts0" -> "$ts0"; other params name no variable.
void add_var_use(std::string_view text, std::vector<std::string>& uses) {
  const size_t dollar = text.find('$');
  if (dollar != std::string_view::npos) uses.push_back(std::string(text.substr(dollar)));
}

Result<Declaration, Diagnostic> declare_hist(Declaration d, const parse::HistCommand& cmd) {
  auto refuse = [&](Span span, std::string detail) {
    return unexpected(Diagnostic{ErrorCode::ConfigNotDeclaration, span, cmd.command, std::move(detail)});
  };
  if (cmd.remove) return refuse(Span{0, 4}, "a removal: delete the line, and the reload removes the trigger");
  if (cmd.control == parse::Control::Continue || cmd.control == parse::Control::Clear)
    return refuse(cmd.control_span, "`cont` and `clear` act on a trigger: use the trigger file or histctl");
  // The key: the command without its size and pause tokens (each with the
  // ':' before it), in the order they were written.
  std::vector<Span> cut;
  if (cmd.size) cut.push_back(cmd.size_span);
  if (cmd.control == parse::Control::Pause) cut.push_back(cmd.control_span);
  std::sort(cut.begin(), cut.end(), [](Span a, Span b) { return a.begin > b.begin; });
  std::string key = cmd.command;
  for (Span s : cut)
    if (s.begin > 0 && s.end <= key.size()) key.erase(s.begin - 1, s.end - s.begin + 1);
  d.key = d.item.event + " " + key;
  d.shape = size_shape(cmd);
  d.paused = cmd.control == parse::Control::Pause;
  if (d.item.event.starts_with("synthetic:")) d.uses.push_back(d.item.event);
  for (const parse::Action& a : cmd.actions) {
    if (!a.synth.empty()) d.uses.push_back("synthetic:" + a.synth);
    if (!a.track_var.empty()) add_var_use(a.track_var, d.uses);
    for (const parse::ActionParam& p : a.params) add_var_use(p.text, d.uses);
  }
  for (const parse::Expr& e : cmd.exprs)
    for (const parse::ExprNode& n : e.nodes)
      if (n.kind == parse::ExprNode::Kind::VarRef) d.uses.push_back("$" + n.var);
  for (const parse::VarDef& v : cmd.vars) d.provides.push_back("$" + v.name);
  return d;
}

Result<Declaration, Diagnostic> declare_enable(Declaration d, const parse::ControlCommand& cmd) {
  if (cmd.remove)
    return unexpected(Diagnostic{ErrorCode::ConfigNotDeclaration, Span{0, 1}, cmd.command,
                                 "a removal: delete the line, and the reload removes the trigger"});
  const std::string target = cmd.has_target() ? cmd.system + ":" + cmd.event : std::string();
  // One of a type per event (and target), as in the kernel: traceon and
  // traceoff are one type, the enable and disable of a target another.
  std::string type(cmd.name());
  if (type.starts_with("dis")) type = "en" + type.substr(3);
  if (type == "traceoff") type = "traceon";
  d.key = fmt::format("{} {}:{}", d.item.event, type, target);
  d.shape = cmd.command;
  if (cmd.has_target() && catalog::event_source(cmd.system) == catalog::EventSource::Synthetic)
    d.uses.push_back(target);
  if (d.item.event.starts_with("synthetic:")) d.uses.push_back(d.item.event);
  return d;
}

Result<Declaration, Diagnostic> declare_trigger(Declaration d) {
  auto parsed = parse::parse_trigger(d.item.text);
  if (!parsed) return unexpected(std::move(parsed).error());
  if (const auto* hist = std::get_if<parse::HistCommand>(&*parsed)) return declare_hist(std::move(d), *hist);
  return declare_enable(std::move(d), std::get<parse::ControlCommand>(*parsed));
}

Result<Declaration, Diagnostic> declare_synthetic(Declaration d) {
  auto parsed = synth::parse_synth_command(d.item.text);
  if (!parsed) return unexpected(std::move(parsed).error());
  if (parsed->remove)
    return unexpected(Diagnostic{ErrorCode::ConfigNotDeclaration, Span{0, 1}, parsed->command,
                                 "a removal: delete the line, and the reload removes the synthetic event"});
  d.item.kind = ConfigItem::Kind::Synthetic;
  d.item.event = parsed->definition.name;
  d.item.text = synth::list_line(parsed->definition);
  d.key = "synthetic:" + d.item.event;
  d.shape = d.item.text;
  d.provides.push_back(d.key);
  return d;
}

// One non-blank, non-comment line.
Result<Declaration, Problem> parse_line(const Origin& origin, std::string_view line) {
  Declaration d;
  d.origin = origin;
  d.line = std::string(line);
  const size_t start = line.find_first_not_of(" \t");
  const size_t word_end = std::min(line.find_first_of(" \t", start), line.size());
  const std::string_view word = line.substr(start, word_end - start);
  auto bad_line = [&](size_t begin, size_t end, std::string detail) {
    return unexpected(
        problem_at(origin, line, 0, Diagnostic{ErrorCode::ConfigLine, span_of(begin, end), d.line, std::move(detail)}));
  };
  if (word.find(':') == std::string_view::npos) {
    // A synthetic event definition; its parser takes the line as written.
    d.item.text = std::string(trim(line));
    d.column = static_cast<uint32_t>(start);
    auto s = declare_synthetic(std::move(d));
    if (!s) return unexpected(problem_at(origin, line, start, std::move(s).error()));
    return std::move(*s);
  }
  for (std::string_view command : {"hist:", "!", "enable_hist:", "disable_hist:"})
    if (word.starts_with(command))
      return bad_line(start, word_end, "the line starts with a command: put SYSTEM:EVENT before it");
  const size_t colon = word.find(':');
  const std::string_view system = word.substr(0, colon), event = word.substr(colon + 1);
  if (!is_event_name(system) || !is_event_name(event))
    return bad_line(start, word_end, fmt::format("'{}' is not SYSTEM:EVENT", word));
  const std::string_view rest = trim(line.substr(word_end));
  if (rest.empty()) return bad_line(line.size(), line.size() + 1, fmt::format("no trigger command after {}", word));
  d.item.kind = ConfigItem::Kind::Trigger;
  d.item.event = std::string(word);
  d.item.text = std::string(rest);
  d.column = static_cast<uint32_t>(rest.data() - line.data());
  const size_t column = d.column;
  // The parsers log a removal without its '!': refused here, the caret on it.
  if (rest.front() == '!')
    return unexpected(problem_at(origin, line, column,
                                 Diagnostic{ErrorCode::ConfigNotDeclaration, Span{0, 1}, d.item.text,
                                            "a removal: delete the line, and the reload removes the trigger"}));
  auto t = declare_trigger(std::move(d));
  if (!t) return unexpected(problem_at(origin, line, column, std::move(t).error()));
  return std::move(*t);
}

// At most kShownBytes of `text` around `caret` (the first ones when the
// caret is among them), "..." where it is cut; `caret` moved to match.
void clip(std::string& text, uint32_t& caret) {
  if (text.size() <= kShownBytes) return;
  const size_t start =
      caret < kShownBytes - 10 ? 0 : std::min<size_t>(caret - kShownBytes / 2, text.size() - kShownBytes);
  std::string shown = (start ? "..." : "") + text.substr(start, kShownBytes);
  if (start + kShownBytes < text.size()) shown += "...";
  caret = static_cast<uint32_t>(caret - start + (start ? 3 : 0));
  text = std::move(shown);
}

}  // namespace

Problem problem_at(const Origin& origin, std::string_view line, size_t column, Diagnostic d) {
  Problem p;
  p.origin = origin;
  p.line = line.empty() ? d.command : std::string(line);
  const bool in_line = line.substr(std::min(column, line.size())).starts_with(d.command) && !d.command.empty();
  p.column = static_cast<uint32_t>(line.empty() ? d.span.begin : in_line ? column + d.span.begin : column);
  // What a file holds is echoed no more than needed to show the fault.
  clip(p.line, p.column);
  const uint32_t end_offset = d.span.end - d.span.begin;
  clip(d.command, d.span.begin);
  d.span.end = std::min<uint32_t>(d.span.begin + end_offset, static_cast<uint32_t>(d.command.size()));
  p.diagnostic = std::move(d);
  return p;
}

std::string Origin::where() const { return line ? fmt::format("{}:{}", file, line) : file; }

std::string Problem::text() const {
  std::string out = fmt::format("{}: error: {}\n", origin.where(), diagnostic.message());
  if (line.empty() && diagnostic.command.empty()) return out;
  // As error_log shows a command: a control character cannot forge lines.
  Diagnostic shown = diagnostic;
  shown.command = line;
  out += fmt::format("  {}\n  {}^\n", shown.printable_command(), std::string(column, ' '));
  return out;
}

ParsedFile parse_file(const std::string& file, std::string_view text) {
  ParsedFile out;
  uint32_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // written on Windows
    const std::string_view content = trim(line);
    if (content.empty() || content.front() == '#') continue;
    auto d = parse_line(Origin{file, number}, line);
    if (d)
      out.declarations.push_back(std::move(*d));
    else
      out.problems.push_back(std::move(d).error());
  }
  return out;
}

Result<Declaration, Diagnostic> declaration_of(const ConfigItem& item) {
  Declaration d;
  d.item = item;
  d.line = item.text;
  auto out = item.kind == ConfigItem::Kind::Synthetic ? declare_synthetic(std::move(d)) : declare_trigger(std::move(d));
  if (out) out->identity = item.identity;
  return out;
}

}  // namespace histd::config
