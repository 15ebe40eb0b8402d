// SPDX-License-Identifier: GPL-2.0-only
// Variables and actions: what makes a trigger talk to other events.
#include <fmt/format.h>

#include <algorithm>

#include "plan/fields.h"
#include "plan/variables.h"

namespace histd::plan {

namespace {

Unexpected<Diagnostic> error_at(const parse::HistCommand& cmd, ErrorCode code, std::string_view text,
                                std::string detail = {}) {
  const uint32_t pos = parse::errpos(cmd.command, text);
  return unexpected(Diagnostic{code, Span{pos, pos + static_cast<uint32_t>(std::max<size_t>(text.size(), 1))},
                               cmd.command, std::move(detail)});
}

const synth::SynthDefinition* find_synth(const PlanContext& r, const std::string& name) {
  for (const synth::SynthDefinition& d : r.synths)
    if (d.name == name) return &d;
  return nullptr;
}

// The kernel's check_synth_field(): equal type names, or equal sizes (and
// signedness, for numbers); a char[] field takes any string.
bool param_fits(const TypedExpr& v, const synth::SynthField& f) {
  using Kind = synth::SynthField::Kind;
  if (f.kind == Kind::DynamicString) return v.is_string;
  if (f.kind == Kind::Stack) return v.is_stack;
  if (v.is_stack) return false;
  if (f.kind == Kind::StaticString) return v.is_string && (v.type == f.type || v.size == f.size);
  if (v.is_string) return false;
  if (v.type == f.type) return true;
  return v.size == f.size && v.is_signed == f.is_signed;
}

// An action parameter's spelling taken apart: "system.event.leaf" or a bare
// leaf. "$system.event.var" (the kernel's printed spelling) is
// "system.event.$var".
struct ParamName {
  std::string system;
  std::string event;
  std::string leaf;
};

ParamName split_param(const std::string& text) {
  const bool printed_ref = text.starts_with("$") && std::count(text.begin(), text.end(), '.') == 2;
  std::string_view t = printed_ref ? std::string_view(text).substr(1) : std::string_view(text);
  ParamName name;
  const size_t d1 = t.find('.');
  const size_t d2 = d1 == std::string_view::npos ? d1 : t.find('.', d1 + 1);
  name.leaf = std::string(t);
  if (d2 != std::string_view::npos) {
    name.system = std::string(t.substr(0, d1));
    name.event = std::string(t.substr(d1 + 1, d2 - d1 - 1));
    name.leaf = std::string(printed_ref ? "$" : "") + std::string(t.substr(d2 + 1));
  }
  return name;
}

parse::ExprNode param_node(const parse::ActionParam& p) {
  parse::ExprNode n;
  n.text = p.text;
  n.span = p.span;
  return n;
}

// "$var": this trigger's variable, else one on the named event, or on
// `default_system`.`default_event` when unqualified.
parse::ExprNode var_param_node(const ExprContext& ctx, const parse::ActionParam& p, ParamName name, bool names_here,
                               const std::string& default_system, const std::string& default_event) {
  parse::ExprNode n = param_node(p);
  n.kind = parse::ExprNode::Kind::VarRef;
  n.var = std::string(name.leaf.substr(1));
  bool own = false;
  for (const parse::VarDef& v : ctx.cmd.vars) own = own || (v.name == n.var && names_here);
  if (!own && name.system.empty() && !default_event.empty()) {
    name.system = default_system;
    name.event = default_event;
  }
  if (!own) {
    n.system = name.system;
    n.event = name.event;
  }
  return n;
}

// The stack at the event, for a long[] field: taken when generating.
TypedExpr stack_param(const parse::ActionParam& p) {
  TypedExpr stack;
  stack.is_stack = true;
  stack.type = "unsigned long[]";
  stack.text = std::string(p.text);
  return stack;
}

// A field of the matching event: the kernel's implicit field variable,
// "synthetic_<field>" on a trigger of that event (the engine creates it).
Result<parse::ExprNode, Diagnostic> field_var_param_node(const ExprContext& ctx, const parse::ActionParam& p,
                                                         const ParamName& name) {
  parse::ExprNode n = param_node(p);
  n.kind = parse::ExprNode::Kind::VarRef;
  n.system = name.system;
  n.event = name.event;
  n.var = std::string(kFieldVarPrefix) + std::string(name.leaf);
  bool found = false;
  for (const RegisteredVar& rv : ctx.context.vars)
    found = found || (rv.system == name.system && rv.event == name.event && rv.name == n.var);
  if (!found) return error_at(ctx.cmd, ErrorCode::ParamNotFound, p.text);
  return n;
}

parse::ExprNode field_param_node(const parse::ActionParam& p, const std::string& leaf) {
  parse::ExprNode n = param_node(p);
  n.kind = parse::ExprNode::Kind::Field;
  n.field.name = std::string(leaf.substr(0, leaf.find('.')));
  n.field.span = p.span;
  return n;
}

// Types the param's node as the one-node expression of a copy of the
// command; what it does not find is a param not found.
Result<TypedExpr, Diagnostic> type_param_node(ExprContext& ctx, parse::ExprNode n) {
  parse::HistCommand scratch = ctx.cmd;
  parse::Expr e;
  e.nodes.push_back(std::move(n));
  e.root = 0;
  scratch.exprs.push_back(std::move(e));
  ExprContext sub{scratch, ctx.format, ctx.context, ctx.plan, ctx.vars_done};
  auto typed = type_expression(sub, static_cast<int>(scratch.exprs.size() - 1));
  if (!typed) {
    Diagnostic d = std::move(typed).error();
    if (d.code == ErrorCode::VarNotFound || d.code == ErrorCode::FieldNotFound) {
      d.code = ErrorCode::ParamNotFound;
    }
    d.command = ctx.cmd.command;
    return unexpected(std::move(d));
  }
  return typed;
}

// Types one action parameter as an expression of its own: "$x",
// "sys.event.$x" or a field of this event. An unqualified variable that is
// not this trigger's is looked for on `default_system`.`default_event`.
Result<TypedExpr, Diagnostic> type_param(ExprContext& ctx, const parse::ActionParam& p,
                                         const std::string& default_system, const std::string& default_event) {
  const ParamName name = split_param(p.text);
  const bool names_here = name.system.empty() || (name.system == ctx.format.system && name.event == ctx.format.name);
  if (name.leaf.starts_with("$"))
    return type_param_node(ctx, var_param_node(ctx, p, name, names_here, default_system, default_event));
  if (names_here && (name.leaf == "common_stacktrace" || name.leaf == "stacktrace")) return stack_param(p);
  if (!names_here) {
    auto n = field_var_param_node(ctx, p, name);
    if (!n) return unexpected(std::move(n).error());
    return type_param_node(ctx, std::move(*n));
  }
  return type_param_node(ctx, field_param_node(p, name.leaf));
}

Result<Unit, Diagnostic> synth_params(ExprContext& ctx, const parse::Action& a, ActionPlan& out) {
  const synth::SynthDefinition* def = find_synth(ctx.context, a.synth);
  if (!def) return error_at(ctx.cmd, ErrorCode::SynthEventNotFound, a.synth);
  if (a.params.size() != def->fields.size()) return error_at(ctx.cmd, ErrorCode::SynthCountMismatch, a.synth);
  out.synth = a.synth;
  for (size_t i = 0; i < a.params.size(); ++i) {
    auto v = type_param(ctx, a.params[i], a.match_system, a.match_event);
    if (!v) return unexpected(std::move(v).error());
    if (!param_fits(*v, def->fields[i])) return error_at(ctx.cmd, ErrorCode::SynthTypeMismatch, a.params[i].text);
    // Elsewhere its readers who may not see kernel addresses would see it.
    if (v->kernel_address && def->fields[i].kind == synth::SynthField::Kind::Integer &&
        !catalog::synthetic_address_type(def->fields[i].type))
      return error_at(ctx.cmd, ErrorCode::SynthTypeMismatch, a.params[i].text,
                      "a kernel address goes into an unsigned long field, which readers who may not see addresses "
                      "see hidden");
    out.params.push_back(ActionParam{a.params[i].text, std::move(*v), def->fields[i]});
  }
  return Unit{};
}

std::string param_list(const parse::Action& a) {
  std::string s;
  if (a.trace_keyword) s = a.synth;
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (i || a.trace_keyword) s += ',';
    s += a.params[i].text;
  }
  return s;
}

uint32_t round8(uint32_t n) { return (n + 7) & ~7u; }

// onmatch(system.event).name(params): the event must exist, the params
// must fit the synthetic event's fields.
Result<Unit, Diagnostic> plan_onmatch(ExprContext& ctx, const parse::Action& a, ActionPlan& out) {
  const parse::HistCommand& cmd = ctx.cmd;
  if (a.kind != parse::Action::Kind::Trace) return error_at(cmd, ErrorCode::ActionMismatch, a.action_name);
  // A synthetic event exists where the registry defines it (the
  // registry's next state may define it before the catalog hears of it).
  const bool defined = a.match_system == catalog::kSynthSystem &&
                       std::any_of(ctx.context.synths.begin(), ctx.context.synths.end(),
                                   [&](const synth::SynthDefinition& d) { return d.name == a.match_event; });
  if (ctx.context.catalog && !defined && !ctx.context.catalog->contains(a.match_system, a.match_event))
    return error_at(cmd, ErrorCode::InvalidSubsysEvent, a.match_event);
  out.match_system = a.match_system;
  out.match_event = a.match_event;
  auto r = synth_params(ctx, a, out);
  if (!r) return unexpected(std::move(r).error());
  out.printed = fmt::format("onmatch({}.{}).{}({})", a.match_system, a.match_event, a.action_name, param_list(a));
  return Unit{};
}

// One field that save() keeps when the tracked variable changes.
Result<SavedField, Diagnostic> plan_saved_field(const ExprContext& ctx, const parse::ActionParam& p) {
  const parse::HistCommand& cmd = ctx.cmd;
  auto r = resolve_field(ctx.format, p.text);
  if (!r || r->access.source == Source::Hitcount || r->access.source == Source::Stacktrace)
    return error_at(cmd, ErrorCode::ParamNotFound, p.text);
  if (!r->readable) return error_at(cmd, ErrorCode::Unsupported, p.text, "BPF programs cannot read " + p.text);
  if (r->access.kernel_address && ctx.context.opaque_addresses)
    return error_at(cmd, ErrorCode::AddressHidden, p.text, hidden_address_use(p.text));
  SavedField f;
  f.name = r->name;
  f.access = r->access;
  f.is_string = is_string_kind(r->access.kind);
  if (!f.is_string && r->access.kind != catalog::FieldKind::Integer)
    return error_at(cmd, ErrorCode::InvalidParam, p.text);
  f.size = f.is_string ? (r->access.kind == catalog::FieldKind::CharArray && r->access.size > 0
                              ? std::min<uint32_t>(round8(r->access.size + 1), 256)
                              : 256)
                       : 8;
  return f;
}

// save(fields): each field's bytes after the last in the record, from
// `offset`. Returns the printed field list.
Result<std::string, Diagnostic> plan_saves(const ExprContext& ctx, const parse::Action& a, uint32_t& offset,
                                           ActionPlan& out) {
  std::string inner;
  for (const parse::ActionParam& p : a.params) {
    auto f = plan_saved_field(ctx, p);
    if (!f) return unexpected(std::move(f).error());
    f->offset = offset;
    offset += f->size;
    if (!inner.empty()) inner += ',';
    inner += f->name;
    out.saves.push_back(std::move(*f));
  }
  return inner;
}

// onmax($var) or onchange($var): the tracked variable's last value, then
// what the action keeps, go in the record from `offset`. One save() a
// trigger, as the kernel allows.
Result<Unit, Diagnostic> plan_tracking(ExprContext& ctx, const parse::Action& a, uint32_t& offset, bool& saved,
                                       ActionPlan& out) {
  const parse::HistCommand& cmd = ctx.cmd;
  const HistPlan& plan = ctx.plan;
  if (!a.track_var.starts_with("$")) return error_at(cmd, ErrorCode::OnxNotVar, a.track_var);
  const std::string name = a.track_var.substr(1);
  for (size_t i = 0; i < plan.vars.size(); ++i)
    if (plan.vars[i].name == name) out.track_var = static_cast<int>(i);
  if (out.track_var < 0) return error_at(cmd, ErrorCode::OnxVarNotFound, a.track_var);
  out.track_text = a.track_var;
  out.track_offset = offset;
  offset += 8;
  const char* handler = a.handler == parse::Action::Handler::OnMax ? "onmax" : "onchange";
  std::string inner;
  switch (a.kind) {
    case parse::Action::Kind::Save: {
      if (saved) return unexpected(Diagnostic{ErrorCode::TooManySaveActions, Span{0, 0}, cmd.command, {}});
      saved = true;
      auto saves = plan_saves(ctx, a, offset, out);
      if (!saves) return unexpected(std::move(saves).error());
      inner = std::move(*saves);
      break;
    }
    case parse::Action::Kind::Snapshot:
      break;
    case parse::Action::Kind::Trace: {
      auto r = synth_params(ctx, a, out);
      if (!r) return unexpected(std::move(r).error());
      inner = param_list(a);
      break;
    }
  }
  out.printed = fmt::format("{}({}).{}({})", handler, a.track_var, a.action_name, inner);
  return Unit{};
}

}  // namespace

Result<Unit, Diagnostic> plan_variables(ExprContext& ctx) {
  const parse::HistCommand& cmd = ctx.cmd;
  // String and stack variables keep their bytes after every variable's slot.
  uint32_t blob_offset = 8 + 8 * static_cast<uint32_t>(cmd.vars.size());
  for (size_t i = 0; i < cmd.vars.size(); ++i) {
    const parse::VarDef& def = cmd.vars[i];
    for (size_t j = 0; j < i; ++j)
      if (cmd.vars[j].name == def.name) return error_at(cmd, ErrorCode::DuplicateVar, def.name);
    ctx.vars_done = i;
    auto e = type_expression(ctx, def.expr);
    if (!e) return unexpected(std::move(e).error());
    Variable v{def.name, std::move(*e), static_cast<uint32_t>(i)};
    if (v.expr.is_string || v.expr.is_stack) {
      v.blob_offset = blob_offset;
      v.blob_size = v.expr.is_string ? kStringVarSize : kStackVarSize;
      blob_offset += v.blob_size;
    }
    ctx.plan.vars.push_back(std::move(v));
  }
  ctx.vars_done = cmd.vars.size();
  return Unit{};
}

Result<Unit, Diagnostic> plan_actions(ExprContext& ctx) {
  HistPlan& plan = ctx.plan;
  // The record: a set mask, one slot per variable, the string and stack
  // variables' bytes, then what actions keep.
  uint32_t offset = 8 + 8 * static_cast<uint32_t>(plan.vars.size());
  for (const Variable& v : plan.vars) offset += v.blob_size;
  const uint32_t vars_end = offset;
  bool saved = false;
  for (const parse::Action& a : ctx.cmd.actions) {
    ActionPlan out;
    out.handler = a.handler;
    out.kind = a.kind;
    auto r = a.handler == parse::Action::Handler::OnMatch ? plan_onmatch(ctx, a, out)
                                                          : plan_tracking(ctx, a, offset, saved, out);
    if (!r) return unexpected(std::move(r).error());
    plan.actions.push_back(std::move(out));
  }
  const bool tracking = offset > vars_end;
  plan.var_record_size = (!plan.vars.empty() || tracking) ? offset : 0;
  return Unit{};
}

}  // namespace histd::plan
