// SPDX-License-Identifier: GPL-2.0-only
// What a unit reads, decided from the plans it is generated from, never by
// searching the code just generated: whether common_pid (the entry asks the
// kernel for the pid only then), and which bytes of its event's record (an
// entry that builds the record, BTF-typed, builds only those: each field is
// a load from a task, and a task's comm a cache line of its own, cold on a
// switch; bench/runqlat.sh).
#include <algorithm>

#include "codegen/emit.h"

namespace histd::codegen::detail {

namespace {

using plan::ExprOp;
using plan::FieldAccess;

// Every field a plan's code may read: keys, values, variables, the filter,
// the actions' params and saves. Every op of an expression, not only those
// reachable from its root (folding can leave others behind): reading too
// much costs a load or a helper call, too little reads the last event's.
template <class F>
void each_field(const plan::TypedExpr& e, F&& f) {
  if (e.is_string) f(e.string_field);
  for (const ExprOp& o : e.ops)
    if (o.kind == ExprOp::Kind::Field) f(o.access);
}

template <class F>
void each_field(const plan::TypedFilter& filter, F&& f) {
  for (const plan::FilterTerm& t : filter.terms)
    if (t.kind == plan::FilterTerm::Kind::Compare) f(t.field);
}

template <class F>
void each_field(const plan::HistPlan& p, F&& f) {
  for (const plan::KeyField& k : p.keys) f(k.access);
  for (const plan::ValField& v : p.vals) {
    f(v.access);
    if (v.expr) each_field(*v.expr, f);
  }
  for (const plan::Variable& v : p.vars) each_field(v.expr, f);
  if (p.filter) each_field(*p.filter, f);
  for (const plan::ActionPlan& a : p.actions) {
    for (const plan::ActionParam& prm : a.params) each_field(prm.value, f);
    for (const plan::SavedField& s : a.saves) f(s.access);
  }
}

template <class Plan>
bool any_pid(const Plan& p) {
  bool pid = false;
  each_field(p, [&](const FieldAccess& a) { pid = pid || a.source == plan::Source::CommonPid; });
  return pid;
}

}  // namespace

// A generated event's record starts with the pid (histd_synth_begin), which
// a traced one asks for itself when the entry did not (HISTD_PID_UNREAD);
// eprobes on it are the entry's to ask for.
bool reads_common_pid(const plan::HistPlan& p) { return any_pid(p); }
bool reads_common_pid(const plan::TypedFilter& f) { return any_pid(f); }

std::vector<RecordRange> record_reads(const std::vector<TriggerInput>& triggers,
                                      const std::vector<ControlInput>& controls, const PidCheck& pids) {
  std::vector<RecordRange> ranges;
  auto add = [&](const FieldAccess& a) {
    if (a.source == plan::Source::Record) ranges.push_back({a.offset, std::max<uint32_t>(a.size, 1)});
  };
  for (const TriggerInput& t : triggers) each_field(*t.plan, add);
  for (const ControlInput& c : controls)
    if (c.filter) each_field(*c.filter, add);
  for (uint32_t offset : pids.pid_fields) ranges.push_back({offset, 4});
  return ranges;
}

bool reads_any(const std::vector<RecordRange>& reads, uint32_t offset, uint32_t size) {
  return std::any_of(reads.begin(), reads.end(),
                     [&](const RecordRange& r) { return r.offset < offset + size && offset < r.offset + r.size; });
}

}  // namespace histd::codegen::detail
