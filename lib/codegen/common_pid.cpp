// SPDX-License-Identifier: GPL-2.0-only
// Whether a unit reads common_pid, decided from the plans it is generated
// from: the entry asks the kernel for the pid only then.
#include "codegen/emit.h"

namespace histd::codegen::detail {

namespace {

using plan::ExprOp;
using plan::Source;

bool is_pid(const plan::FieldAccess& a) { return a.source == Source::CommonPid; }

// What expr_code() reads: the ops reachable from the root (folding can
// leave others behind).
bool reads_pid(const plan::TypedExpr& e, int op) {
  if (e.is_string || op < 0) return false;
  const ExprOp& o = e.ops.at(static_cast<size_t>(op));
  if (o.kind == ExprOp::Kind::Field) return is_pid(o.access);
  return reads_pid(e, o.lhs) || reads_pid(e, o.rhs);
}

}  // namespace

bool reads_common_pid(const plan::TypedFilter& f) {
  // String predicates compare the record's or the task's strings.
  for (const plan::FilterTerm& t : f.terms)
    if (t.kind == plan::FilterTerm::Kind::Compare && !t.is_string && is_pid(t.field)) return true;
  return false;
}

bool reads_common_pid(const plan::HistPlan& p) {
  // A generated event's record starts with the pid (histd_synth_begin),
  // which a traced one asks for itself when the entry did not
  // (HISTD_PID_UNREAD); eprobes on it are the entry's to ask for.
  if (p.filter && reads_common_pid(*p.filter)) return true;
  for (const plan::KeyField& k : p.keys)
    if (table::key_traits(k.display).holds == table::KeyHolds::Number && is_pid(k.access)) return true;
  for (const plan::ValField& v : p.vals)
    if (v.expr ? reads_pid(*v.expr, v.expr->root) : is_pid(v.access)) return true;
  for (const plan::Variable& v : p.vars)
    if (reads_pid(v.expr, v.expr.root)) return true;
  for (const plan::ActionPlan& a : p.actions) {
    for (const plan::ActionParam& prm : a.params)
      if (reads_pid(prm.value, prm.value.root)) return true;
    for (const plan::SavedField& f : a.saves)
      if (!f.is_string && is_pid(f.access)) return true;
  }
  return false;
}

}  // namespace histd::codegen::detail
