// SPDX-License-Identifier: GPL-2.0-only
// onmatch(...)/onmax(...)/onchange(...) tokens, read the way the kernel's
// onmatch_parse(), track_data_parse() and action_parse() read them: strsep on
// ')', '.', '(' and ','. Which actions a handler allows, and whether params
// name real variables, is the planner's business.
#include "parse/hist_parts.h"
#include "parse/text.h"

namespace histd::parse {

namespace {

// Splits `p` at the first `sep`: the part before, and whether `sep` was found.
std::pair<Piece, bool> take_until(Piece& p, char sep) {
  const size_t at = p.text.find(sep);
  if (at == std::string_view::npos) {
    Piece all = p;
    p = Piece{std::string_view(), p.begin + p.text.size()};
    return {all, false};
  }
  Piece head = p.sub(0, at);
  p = p.sub(at + 1);
  return {head, true};
}

Unexpected<Diagnostic> fail_at(const HistCommand& cmd, ErrorCode code, std::string_view text) {
  const uint32_t pos = errpos(cmd.command, text);
  return parse_error(cmd, code, Span{pos, pos + static_cast<uint32_t>(std::max<size_t>(text.size(), 1))});
}

Result<Unit, Diagnostic> params(const HistCommand& cmd, const Piece& list, Action& a) {
  bool first = true;
  for (const Piece& raw : split(list, ',')) {
    const Piece param = trim(raw);
    if (a.params.size() >= 64) return parse_error(cmd, ErrorCode::TooManyParams, param.span());
    // The kernel refuses params shorter than two characters.
    if (param.text.size() < 2) return fail_at(cmd, ErrorCode::InvalidParam, param.text);
    if (first && a.trace_keyword) {
      a.synth = std::string(param.text);
      a.synth_span = param.span();
      first = false;
      continue;
    }
    first = false;
    a.params.push_back(ActionParam{std::string(param.text), param.span()});
  }
  return Unit{};
}

// ".<action>(params)" after the handler's closing parenthesis.
Result<Unit, Diagnostic> action(const HistCommand& cmd, Piece rest, Action& a) {
  if (rest.text.empty() || rest.text.front() != '.') return parse_error(cmd, ErrorCode::ActionNotFound, Span{0, 0});
  rest = rest.sub(1);
  auto [name, has_paren] = take_until(rest, '(');
  if (!has_paren || name.text.empty()) return parse_error(cmd, ErrorCode::ActionNotFound, Span{0, 0});
  a.action_name = std::string(name.text);
  a.action_span = name.span();
  auto [list, closed] = take_until(rest, ')');
  if (!closed) return fail_at(cmd, ErrorCode::NoClosingParen, list.text);
  if (!rest.text.empty()) return parse_error(cmd, ErrorCode::UnknownToken, rest.span(), "text after the action's ')'");
  if (name.text.starts_with("save")) {
    a.kind = Action::Kind::Save;
    if (trim(list).text.empty()) return parse_error(cmd, ErrorCode::NoSaveParams, Span{0, 0});
    return params(cmd, list, a);
  }
  if (name.text.starts_with("snapshot")) {
    a.kind = Action::Kind::Snapshot;
    return Unit{};
  }
  a.kind = Action::Kind::Trace;
  a.trace_keyword = name.text.starts_with("trace");
  if (!a.trace_keyword) {
    a.synth = a.action_name;
    a.synth_span = a.action_span;
  }
  if (trim(list).text.empty()) return Unit{};
  return params(cmd, list, a);
}

}  // namespace

Result<Action, Diagnostic> parse_action(const HistCommand& cmd, const Piece& token) {
  Action a;
  a.span = token.span();
  Piece rest = token;
  if (token.text.starts_with("onmatch(")) {
    a.handler = Action::Handler::OnMatch;
    rest = token.sub(8);
    auto [event, closed] = take_until(rest, ')');
    if (!closed) return fail_at(cmd, ErrorCode::NoClosingParen, event.text);
    a.match_span = event.span();
    const size_t dot = event.text.find('.');
    if (dot == std::string_view::npos) return fail_at(cmd, ErrorCode::SubsysNotFound, event.text);
    a.match_system = std::string(event.text.substr(0, dot));
    a.match_event = std::string(event.text.substr(dot + 1));
  } else {
    const bool max = token.text.starts_with("onmax(");
    a.handler = max ? Action::Handler::OnMax : Action::Handler::OnChange;
    rest = token.sub(max ? 6 : 9);
    auto [var, closed] = take_until(rest, ')');
    if (!closed) return parse_error(cmd, ErrorCode::NoClosingParen, token.span());
    a.track_var = std::string(var.text);
    a.track_span = var.span();
  }
  auto r = action(cmd, rest, a);
  if (!r) return unexpected(std::move(r).error());
  return a;
}

}  // namespace histd::parse
