// SPDX-License-Identifier: GPL-2.0-only
// The kernel's implicit field variables: an onmatch() param naming a field
// of the matching event ("sched.sched_waking.prio") is carried to the
// generating trigger in a variable ("synthetic_prio") on a histogram of the
// matching event (create_field_var_hist() in trace_events_hist.c). Planned
// here from the typed plan of that event's histogram: no command text is
// built to be parsed again.
#include <algorithm>

#include "histd/plan.h"
#include "histd/plan_memory.h"

namespace histd::plan {

namespace {

Span span_at(size_t begin, size_t size) {
  return Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + size)};
}

}  // namespace

std::vector<FieldVarNeed> field_var_needs(const parse::HistCommand& cmd, std::string_view system,
                                          std::string_view event, const PlanContext& context) {
  std::vector<FieldVarNeed> out;
  if (cmd.remove || cmd.control != parse::Control::None) return out;
  auto held = [&](const std::string& sys, const std::string& ev, const std::string& name) {
    const bool registered = std::any_of(context.vars.begin(), context.vars.end(), [&](const RegisteredVar& v) {
      return v.system == sys && v.event == ev && v.name == name;
    });
    return registered || std::any_of(out.begin(), out.end(), [&](const FieldVarNeed& n) {
             return n.system == sys && n.event == ev && n.name == name;
           });
  };
  for (const parse::Action& a : cmd.actions) {
    if (a.handler != parse::Action::Handler::OnMatch) continue;
    if (a.match_system == system && a.match_event == event) continue;
    const std::string prefix = a.match_system + "." + a.match_event + ".";
    for (const parse::ActionParam& p : a.params) {
      if (!p.text.starts_with(prefix)) continue;
      const std::string field = p.text.substr(prefix.size());
      // "$var" is a variable, and "field.modifier" not a plain field.
      if (field.empty() || field[0] == '$' || field.find('.') != std::string::npos) continue;
      const std::string name = std::string(kFieldVarPrefix) + field;
      if (held(a.match_system, a.match_event, name)) continue;
      out.push_back(FieldVarNeed{a.match_system, a.match_event, field, name, p.text});
    }
  }
  return out;
}

Result<FieldVarTrigger, Diagnostic> plan_field_var(const FieldVarNeed& need, const HistPlan& model,
                                                   const catalog::EventFormat& format, const PlanContext& context) {
  // The command as the kernel would log it; its keys are the model's
  // fields by name (their modifiers and the filter come typed from the
  // model below), the variable a lone field.
  parse::HistCommand cmd;
  cmd.command = "hist:keys=";
  for (size_t k = 0; k < model.keys.size(); ++k) {
    if (k) cmd.command += ',';
    parse::FieldRef key;
    key.name = model.keys[k].name;
    key.span = span_at(cmd.command.size(), model.keys[k].printed.size());
    cmd.command += model.keys[k].printed;
    cmd.keys.push_back(std::move(key));
  }
  cmd.keys_span = Span{5, static_cast<uint32_t>(cmd.command.size())};
  cmd.command += ":";
  parse::VarDef var;
  var.name = need.name;
  var.name_span = span_at(cmd.command.size(), need.name.size());
  cmd.command += need.name + "=";
  parse::ExprNode node;
  node.kind = parse::ExprNode::Kind::Field;
  node.field.name = need.field;
  node.field.span = span_at(cmd.command.size(), need.field.size());
  node.text = need.field;
  node.span = node.field.span;
  cmd.command += need.field;
  const Span expr_span = node.span;
  cmd.exprs.push_back(parse::Expr{{std::move(node)}, 0, expr_span});
  var.expr = 0;
  cmd.vars.push_back(std::move(var));
  if (model.filter) cmd.command += " if " + model.filter_text;

  auto planned = plan_hist(cmd, format, context);
  if (!planned) return unexpected(std::move(planned).error());
  HistPlan plan = std::move(*planned);
  // Keyed exactly like the model (modifiers included), under its filter.
  plan.keys = model.keys;
  plan.key_size = model.key_size;
  plan.filter = model.filter;
  plan.filter_text = model.filter_text;
  plan.table_map = choose_table_map(plan, context.tables);
  plan.hot_slots = choose_hot_slots(plan);
  return FieldVarTrigger{std::move(cmd), std::move(plan)};
}

}  // namespace histd::plan
