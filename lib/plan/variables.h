// SPDX-License-Identifier: GPL-2.0-only
// Planning of the inter-event parts of a trigger: expressions, variables,
// references and actions. Shared by lib/plan's .cpp files only.
#pragma once

#include "histd/plan.h"

namespace histd::plan {

// What typing one trigger's expressions needs.
struct ExprContext {
  const parse::HistCommand& cmd;
  const catalog::EventFormat& format;
  const PlanContext& context;
  HistPlan& plan;
  // How many of cmd.vars have been planned into plan.vars: a reference to
  // one of this trigger's own variables must name an earlier one.
  size_t vars_done = 0;
};

// Where a value is used: an operand of an arithmetic operator consumes the
// variables it reads (read-once).
enum class Use { Operand, Direct };

// Types cmd.exprs[index]. Own simple field variables are substituted by
// their field, as the kernel's local_field_var_ref() does.
Result<TypedExpr, Diagnostic> type_expression(ExprContext& ctx, int index);

// The variables (cmd.vars) into plan.vars, in order.
Result<Unit, Diagnostic> plan_variables(ExprContext& ctx);

// The actions (cmd.actions) into plan.actions; sizes the variable record.
Result<Unit, Diagnostic> plan_actions(ExprContext& ctx);

// Printed form of an expression's field operand: "common_timestamp.usecs".
std::string operand_text(const parse::FieldRef& ref);

}  // namespace histd::plan
