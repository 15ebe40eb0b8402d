// SPDX-License-Identifier: GPL-2.0-only
// Which bytes of its event's record a unit reads, decided from the plans it
// is generated from: an entry that builds the record (BTF-typed) builds only
// those fields. Why: each field built is a load from a task, and a task's
// comm is a cache line of its own, cold on a switch (bench/runqlat.sh).
#include <algorithm>

#include "codegen/emit.h"

namespace histd::codegen::detail {

namespace {

using plan::ExprOp;
using plan::FieldAccess;

struct Reads {
  std::vector<RecordRange> ranges;
  void add(const FieldAccess& a) {
    if (a.source == plan::Source::Record) ranges.push_back({a.offset, std::max<uint32_t>(a.size, 1)});
  }
  void add(const plan::TypedExpr& e) {
    if (e.is_string) add(e.string_field);
    for (const ExprOp& o : e.ops)
      if (o.kind == ExprOp::Kind::Field) add(o.access);
  }
  void add(const plan::TypedFilter& f) {
    for (const plan::FilterTerm& t : f.terms)
      if (t.kind == plan::FilterTerm::Kind::Compare) add(t.field);
  }
  void add(const plan::HistPlan& p) {
    for (const plan::KeyField& k : p.keys) add(k.access);
    for (const plan::ValField& v : p.vals) {
      add(v.access);
      if (v.expr) add(*v.expr);
    }
    for (const plan::Variable& v : p.vars) add(v.expr);
    if (p.filter) add(*p.filter);
    for (const plan::ActionPlan& a : p.actions) {
      for (const plan::ActionParam& prm : a.params) add(prm.value);
      for (const plan::SavedField& s : a.saves) add(s.access);
    }
  }
};

}  // namespace

// Every op, not only those reachable from an expression's root: a field
// read for nothing costs a load, one missed would read the last event's.
std::vector<RecordRange> record_reads(const std::vector<TriggerInput>& triggers,
                                      const std::vector<ControlInput>& controls, const PidCheck& pids) {
  Reads r;
  for (const TriggerInput& t : triggers) r.add(*t.plan);
  for (const ControlInput& c : controls)
    if (c.filter) r.add(*c.filter);
  for (uint32_t offset : pids.pid_fields) r.ranges.push_back({offset, 4});
  return std::move(r.ranges);
}

bool reads_any(const std::vector<RecordRange>& reads, uint32_t offset, uint32_t size) {
  return std::any_of(reads.begin(), reads.end(),
                     [&](const RecordRange& r) { return r.offset < offset + size && offset < r.offset + r.size; });
}

}  // namespace histd::codegen::detail
