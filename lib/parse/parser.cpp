// SPDX-License-Identifier: GPL-2.0-only
// The hist command: [!]hist[:token]... [ if <filter>]
// Tokens are split on ':' and may come in any order, as in the kernel's
// parse_hist_trigger_attrs(); spans index into the logged command.

#include "histd/parse.h"
#include "parse/hist_parts.h"
#include "parse/text.h"

namespace histd::parse {

Unexpected<Diagnostic> parse_error(const HistCommand& cmd, ErrorCode code, Span span, std::string detail) {
  return unexpected(Diagnostic{code, span, cmd.command, std::move(detail)});
}

namespace {

Result<ModifierUse, Diagnostic> parse_modifier(const HistCommand& cmd, const Piece& mod) {
  ModifierUse m;
  m.span = mod.span();
  if (const modifier::Written w = modifier::find(mod.text); w.info) {
    m.kind = w.info->kind;
    m.buckets = w.number;
    return m;
  }
  return parse_error(cmd, ErrorCode::BadFieldModifier,
                     m.span.begin == m.span.end ? Span{m.span.begin, m.span.begin + 1} : m.span);
}

class HistParser {
 public:
  explicit HistParser(HistCommand& cmd) : cmd_(cmd) {}

  Unexpected<Diagnostic> fail(ErrorCode code, Span span, std::string detail = {}) const {
    return unexpected(Diagnostic{code, span, cmd_.command, std::move(detail)});
  }

  Result<Unit, Diagnostic> token(const Piece& t) {
    const size_t eq = t.text.find('=');
    if (eq == std::string_view::npos) return bare(t);
    const std::string_view key = t.text.substr(0, eq);
    const Piece value{t.text.substr(eq + 1), t.begin + eq + 1};
    if (value.text.empty()) return fail(ErrorCode::EmptyAssignment, t.span());
    if (key == "key" || key == "keys") {
      if (!cmd_.keys.empty()) return fail(ErrorCode::DuplicateAttribute, t.span());
      cmd_.keys_span = t.span();
      return fields(value, cmd_.keys);
    }
    if (key == "val" || key == "vals" || key == "values") {
      if (!cmd_.vals.empty()) return fail(ErrorCode::DuplicateAttribute, t.span());
      cmd_.vals_span = t.span();
      return fields(value, cmd_.vals);
    }
    if (key == "sort") {
      if (!cmd_.sort.empty()) return fail(ErrorCode::DuplicateAttribute, t.span());
      cmd_.sort_span = t.span();
      return sort(value);
    }
    if (key == "size") {
      if (cmd_.size) return fail(ErrorCode::DuplicateAttribute, t.span());
      auto n = parse_u64(value.text);
      if (!n) return fail(ErrorCode::InvalidSize, value.span());
      cmd_.size = *n;
      cmd_.size_span = t.span();
      return Unit{};
    }
    if (key == "name") {
      if (cmd_.name) return fail(ErrorCode::DuplicateAttribute, t.span());
      // Printed back as written (name=X), like a filter: no forged lines.
      if (const size_t bad = value.text.find_first_of(std::string_view("\n\r\0", 3)); bad != std::string_view::npos)
        return fail(ErrorCode::NameControlChar, value.sub(bad, 1).span());
      cmd_.name = std::string(value.text);
      cmd_.name_span = t.span();
      return Unit{};
    }
    if (key == "clock") {
      if (cmd_.clock) return fail(ErrorCode::DuplicateAttribute, t.span());
      cmd_.clock = std::string(value.text);
      cmd_.clock_span = value.span();
      return Unit{};
    }
    return variables(t);
  }

 private:
  Result<Unit, Diagnostic> bare(const Piece& t) {
    Control c = Control::None;
    if (t.text == "pause")
      c = Control::Pause;
    else if (t.text == "cont" || t.text == "continue")
      c = Control::Continue;
    else if (t.text == "clear")
      c = Control::Clear;
    else if (t.text == "nohitcount" || t.text == "NOHC") {
      cmd_.nohitcount = true;
      cmd_.nohitcount_span = t.span();
      return Unit{};
    } else if (t.text.starts_with("onmatch(") || t.text.starts_with("onmax(") || t.text.starts_with("onchange(")) {
      if (cmd_.actions.size() == 8) return fail(ErrorCode::UnknownToken, t.span(), "more than 8 actions");
      auto a = parse_action(cmd_, t);
      if (!a) return unexpected(std::move(a).error());
      cmd_.actions.push_back(std::move(*a));
      return Unit{};
    } else {
      return fail(ErrorCode::UnknownToken, t.text.empty() ? Span{t.span().begin, t.span().begin + 1} : t.span());
    }
    cmd_.control = c;
    cmd_.control_span = t.span();
    return Unit{};
  }

  // "name=expr[,name=expr]...": the kernel's parse_var_defs().
  Result<Unit, Diagnostic> variables(const Piece& t) {
    for (const Piece& def : split(t, ',')) {
      const size_t eq = def.text.find('=');
      if (eq == std::string_view::npos || eq + 1 == def.text.size()) {
        const uint32_t pos = errpos(cmd_.command, def.text.substr(0, eq));
        return fail(ErrorCode::MalformedAssignment, Span{pos, pos + static_cast<uint32_t>(std::max<size_t>(eq, 1))});
      }
      const Piece name = def.sub(0, eq);
      if (cmd_.vars.size() == 16) {
        const uint32_t pos = errpos(cmd_.command, name.text);
        return fail(ErrorCode::TooManyVars, Span{pos, pos + static_cast<uint32_t>(name.text.size())});
      }
      bool good = !name.text.empty() && is_ident_start(name.text.front());
      for (char c : name.text) good = good && is_ident(c);
      if (!good) return fail(ErrorCode::MalformedAssignment, name.span(), "a variable name is a C identifier");
      auto e = parse_expression(cmd_, def.sub(eq + 1));
      if (!e) return unexpected(std::move(e).error());
      cmd_.vars.push_back(VarDef{std::string(name.text), name.span(), *e});
    }
    return Unit{};
  }

  Result<Unit, Diagnostic> fields(const Piece& list, std::vector<FieldRef>& out) {
    for (const Piece& item : split(list, ',')) {
      if (is_expression(item.text)) {
        auto e = parse_expression(cmd_, item);
        if (!e) return unexpected(std::move(e).error());
        FieldRef ref;
        ref.span = item.span();
        ref.expr = *e;
        out.push_back(std::move(ref));
        continue;
      }
      auto f = parse_field_ref(cmd_, item);
      if (!f) return unexpected(std::move(f).error());
      out.push_back(std::move(*f));
    }
    return Unit{};
  }

  Result<Unit, Diagnostic> sort(const Piece& list) {
    // The kernel's create_sort_keys() puts both errors under the first
    // "sort=" of the command, and refuses a second field that has any after
    // it before looking at the second field itself.
    const uint32_t at = errpos(cmd_.command, "sort=");
    const Span under_sort{at, at + 5};
    const std::vector<Piece> items = split(list, ',');
    for (size_t i = 0; i < items.size(); ++i) {
      const Piece& item = items[i];
      if (item.text.empty()) return fail(ErrorCode::EmptySortField, under_sort);
      if (i == 1 && items.size() > 2) return fail(ErrorCode::TooManySortFields, under_sort);
      SortKey k;
      k.span = item.span();
      // A variable's value sorts under the name the kernel prints it with,
      // "$name" or "$system.event.name": its dots are not modifiers.
      size_t dot = item.text.find('.');
      if (item.text.starts_with("$")) {
        dot = std::string_view::npos;
        for (std::string_view dir : {".descending", ".ascending"})
          if (item.text.ends_with(dir)) dot = item.text.size() - dir.size();
      }
      k.name = std::string(item.text.substr(0, dot));
      if (k.name.empty()) return fail(ErrorCode::EmptySortField, under_sort);
      if (dot != std::string_view::npos) {
        // A key's own modifier may be repeated (sort=call_site.sym); only the
        // last part may set the direction.
        std::string_view rest = item.text.substr(dot + 1);
        const size_t last_dot = rest.rfind('.');
        const std::string_view dir = last_dot == std::string_view::npos ? rest : rest.substr(last_dot + 1);
        const size_t dir_begin = item.begin + item.text.size() - dir.size();
        if (dir == "descending") {
          k.descending = true;
        } else if (dir != "ascending") {
          const bool is_field_modifier =
              last_dot == std::string_view::npos && (parse_modifier(cmd_, Piece{dir, dir_begin}).ok());
          if (!is_field_modifier)
            return fail(ErrorCode::InvalidSortModifier,
                        Span{static_cast<uint32_t>(dir_begin), static_cast<uint32_t>(dir_begin + dir.size())});
        }
      }
      cmd_.sort.push_back(std::move(k));
    }
    return Unit{};
  }

  HistCommand& cmd_;
};

}  // namespace

Result<FieldRef, Diagnostic> parse_field_ref(const HistCommand& cmd, const Piece& item) {
  FieldRef f;
  f.span = item.span();
  if (item.text.empty()) return parse_error(cmd, ErrorCode::FieldNotFound, Span{f.span.begin, f.span.begin + 1});
  // The kernel rewrites ".sym-offset" before splitting on '-' as minus;
  // here modifiers are read as words that may contain '-'.
  size_t i = 0;
  while (i < item.text.size() && is_ident(item.text[i])) ++i;
  f.name = std::string(item.text.substr(0, i));
  if (f.name.empty() || !is_ident_start(f.name[0]) || (i < item.text.size() && item.text[i] != '.')) {
    return parse_error(cmd, ErrorCode::FieldNotFound, item.span());
  }
  while (i < item.text.size()) {
    const size_t mod_begin = ++i;  // past '.'
    size_t end = item.text.find('.', mod_begin);
    if (end == std::string_view::npos) end = item.text.size();
    const Piece mod{item.text.substr(mod_begin, end - mod_begin), item.begin + mod_begin};
    auto m = parse_modifier(cmd, mod);
    if (!m) return unexpected(std::move(m).error());
    f.modifiers.push_back(*m);
    i = end;
  }
  return f;
}

std::string_view modifier_name(Modifier m) { return modifier::info(m).name; }

Result<HistCommand, Diagnostic> parse_hist(std::string_view line) {
  HistCommand cmd;
  std::string_view text = trim(line);
  if (!text.empty() && text.front() == '!') {
    cmd.remove = true;
    text = trim(text.substr(1));
  }
  if (!text.starts_with("hist")) {
    cmd.command = std::string(text);
    return unexpected(
        Diagnostic{ErrorCode::UnknownCommand, Span{0, static_cast<uint32_t>(text.size())}, cmd.command, {}});
  }
  std::string_view rest = text.substr(4);
  if (!rest.empty() && rest.front() == ':')
    rest.remove_prefix(1);
  else if (!rest.empty() && !is_space(rest.front()))
    return unexpected(
        Diagnostic{ErrorCode::UnknownCommand, Span{0, static_cast<uint32_t>(text.size())}, std::string(text), {}});
  cmd.command = "hist:" + std::string(rest);
  constexpr size_t base = 5;  // "hist:"

  std::string_view tokens = rest;
  const size_t if_pos = find_filter_keyword(std::string(" ") + std::string(rest));
  if (if_pos != std::string_view::npos) {
    // find_filter_keyword was given a leading blank so that "if" right at
    // the start (after "hist ") counts too: shift back by one.
    const size_t at = if_pos - 1;
    tokens = trim(rest.substr(0, at));
    size_t fstart = at + 2;
    while (fstart < rest.size() && is_space(rest[fstart])) ++fstart;
    std::string_view ftext = trim(rest.substr(fstart));
    auto filter = parse_filter(ftext, static_cast<uint32_t>(base + fstart), cmd.command);
    if (!filter) return unexpected(std::move(filter).error());
    cmd.filter = std::move(*filter);
  }

  HistParser parser(cmd);
  if (!tokens.empty()) {
    for (const Piece& t : split(Piece{tokens, base}, ':')) {
      auto r = parser.token(t);
      if (!r) return unexpected(std::move(r).error());
    }
  }
  if (cmd.keys.empty()) return parser.fail(ErrorCode::MissingKeys, Span{0, 4});
  return cmd;
}

Result<TriggerCommand, Diagnostic> parse_trigger(std::string_view line, size_t max_bytes) {
  if (line.size() >= max_bytes) return unexpected(too_long(line, max_bytes));
  std::string_view t = trim(line);
  if (!t.empty() && t.front() == '!') t = trim(t.substr(1));
  if (!t.starts_with("hist:") && !t.starts_with("hist ") && t != "hist") {
    auto e = parse_control_trigger(line, max_bytes);
    if (!e) return unexpected(std::move(e).error());
    return TriggerCommand{std::move(*e)};
  }
  auto h = parse_hist(line);
  if (!h) return unexpected(std::move(h).error());
  return TriggerCommand{std::move(*h)};
}

}  // namespace histd::parse
