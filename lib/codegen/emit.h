// SPDX-License-Identifier: GPL-2.0-only
// Pieces of BPF C shared by codegen's .cpp files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "histd/codegen.h"
#include "histd/plan.h"

namespace histd::codegen::detail {

// A numeric field as a u64 C expression; `ts` reads common_timestamp.
std::string load_expr(const plan::FieldAccess& a, const std::string& ts = "c->ts");
// common_timestamp on the plan's clock.
std::string timestamp_expr(const plan::HistPlan& p);

// The types and maps of a trigger's variables and references.
void emit_inter_event_types(std::string& out, size_t i, const plan::HistPlan& p);
// Before the table update: the references to other triggers' variables,
// into locals r<k>; returns from the handler when one is not set.
std::string emit_ref_reads(size_t i, const plan::HistPlan& p);
// The trigger's variables into locals vv<slot>.
std::string emit_var_values(const plan::HistPlan& p);
// A typed expression over the record, refs and variables.
std::string expr_code(const plan::TypedExpr& e, const plan::HistPlan& p);
// After the table update: the variable record store and the actions.
std::string emit_var_store_and_actions(size_t i, const TriggerInput& in);

// Whether the code generated for a plan (or an enable's filter) reads
// common_pid (fields_read.cpp): the unit's entry then asks the kernel for it.
bool reads_common_pid(const plan::HistPlan& p);
bool reads_common_pid(const plan::TypedFilter& f);

// Hot slots (hot_slots.cpp): on a hit in the event's slot, add there and
// return from the handler; after the hash took the event, claim the slot.
std::string hot_hit(size_t i, const plan::HistPlan& p, const std::vector<std::string>& values);
std::string hot_claim(size_t i, const plan::HistPlan& p);

// What controls tracing (control_code.cpp): recording an enabled event (the
// per-CPU buffer map, and record_event(ctx, rec, c) that sends the record
// to the ring, when `filter`, its filter's C expression, holds or is "");
// control trigger i as control_<i>(ctx, rec, c) with its
// filter's C expression (or ""); the per-CPU stack buffer map, which a
// recording unit and one with a stacktrace trigger define.
std::string emit_record(const RecordInput& r, const std::string& filter);
std::string emit_control(size_t i, const ControlInput& in, const std::string& filter);
std::string emit_stack_buffer();

// Bytes of the event's record a unit reads (fields_read.cpp): its own
// triggers' fields (keys, values, variables, filters, action params and
// saves), its controls' filters' and the pid check's.
struct RecordRange {
  uint32_t offset = 0;
  uint32_t size = 0;
};
std::vector<RecordRange> record_reads(const std::vector<TriggerInput>& triggers,
                                      const std::vector<ControlInput>& controls, const PidCheck& pids);
bool reads_any(const std::vector<RecordRange>& reads, uint32_t offset, uint32_t size);

// The kprobe program of a probe event (probe_entry.cpp): rebuilds the
// record in per-CPU scratch, then runs `handle` on it.
std::string probe_entry(const ProbeEntry& entry, int needs_ts, int needs_pid);
// The tp_btf program of a tracepoint entered BTF-typed (probe_entry.cpp):
// builds the fields of the record the unit reads (`reads`; all of them
// when none is given) from the arguments.
std::string btf_entry(const BtfEntry& entry, int needs_ts, int needs_pid,
                      const std::optional<std::vector<RecordRange>>& reads);
// Its arguments alone: each computed from `ctx` (a register set, or the
// attached event's record) into `rec` from `data` on.
std::string probe_values(const ProbeEntry& entry);
// The buffer eprobes on synthetic events are built in (EprobeOutput).
std::string emit_eprobe_buffer();
inline constexpr const char* kEprobeBufferMap = "histd_eprobe_buf";

// Replaces each HISTD_LOAD_<S|U><bits>(rec, <offset>u) in `text` by
// HISTD_FIELD_<S|U><bits>(rec, f<n>), one n for each field, offset, size
// and signedness alike (record_fields.cpp); returns the fields in n order.
std::vector<RecordField> lift_record_fields(std::string& text);
// struct histd_rec with those members, "" for none.
std::string record_struct(const std::vector<RecordField>& fields);

// Collects a unit's parts (filter_code.cpp): helper functions come before
// the handlers that call them, and the numbers the unit reads from
// histd_k[] instead of spelling them (GeneratedUnit::constants: the
// filters' numbers, each hist trigger's control slot), in this order.
class Emitter {
 public:
  std::string helpers;
  std::string body;
  std::vector<uint64_t> constants;

  // `value` as the unit reads it: histd_k[<its place>].
  std::string number(uint64_t value);
  // Filter term `index` of `f` as a C expression over rec and c.
  std::string filter_expr(const plan::TypedFilter& f, int index);

 private:
  void chain(const plan::TypedFilter& f, int index, plan::FilterTerm::Kind kind, const char* op, std::string& out);
  size_t string_predicate(const plan::FilterTerm& t);
  std::string segment_match(const std::vector<plan::GlobAtom>& seg, const std::string& base, bool words);
  std::string segment_length(const std::vector<plan::GlobAtom>& seg, bool words);
  std::string search(const std::vector<plan::GlobAtom>& seg, const std::string& no, uint32_t longest);
  std::string loop_search(const std::vector<plan::GlobAtom>& seg, const std::string& no, uint32_t longest);
  std::optional<std::string> plain_match(const plan::StringMatch& m, const std::string& no, const std::string& yes);
  static std::string load_string(const plan::FieldAccess& a);
  static uint32_t longest_string(const plan::FieldAccess& a);

  size_t next_predicate_ = 0;
  size_t next_search_ = 0;
};

}  // namespace histd::codegen::detail
