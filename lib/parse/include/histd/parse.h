// SPDX-License-Identifier: GPL-2.0-only
// Stage 1, parse: command text -> AST. Pure; no catalog, no I/O.
//
// Every node carries its Span: byte offsets into the *logged command*, which
// is the text tracefs would show in error_log: "hist:" followed by everything
// after the "hist:" prefix of what the user wrote (a leading '!' and
// surrounding white space are not part of it), filter included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "histd/diagnostic.h"
#include "histd/modifier.h"
#include "histd/result.h"

namespace histd::parse {

// The modifiers and what each allows: histd/modifier.h.
using modifier::Modifier;

struct ModifierUse {
  Modifier kind = Modifier::Hex;
  uint64_t buckets = 0;  // only for Buckets, > 0
  Span span;             // the modifier text after the '.', e.g. "sym-offset"
  friend bool operator==(const ModifierUse&, const ModifierUse&) = default;
};

// A field as written in keys=, vals=: "call_site.sym", "common_pid.execname".
// An item that is not a plain field ("$ts0", "common_timestamp-$ts0") names
// an expression of HistCommand::exprs instead, and `name` is empty.
struct FieldRef {
  std::string name;                    // "call_site"
  std::vector<ModifierUse> modifiers;  // in the order written (the kernel allows one)
  Span span;                           // the whole "call_site.sym"
  int expr = -1;                       // index into HistCommand::exprs, or -1
  friend bool operator==(const FieldRef&, const FieldRef&) = default;
};

// ---- expressions: operands of variables, keys and values -------------------

// One node of an expression tree as written. The tree is split the way the
// kernel's parse_expr() splits it: at the right-most operator of the lowest
// precedence, so equal precedence associates to the left.
struct ExprNode {
  enum class Kind { Field, VarRef, Constant, Add, Sub, Mul, Div, Negate };
  Kind kind = Kind::Field;
  FieldRef field;         // Field
  std::string system;     // VarRef: "sched" in "sched.sched_waking.$ts0", else empty
  std::string event;      // VarRef
  std::string var;        // VarRef: the name without '$'
  uint64_t constant = 0;  // Constant
  int lhs = -1;           // operators: operands (Negate: lhs only)
  int rhs = -1;
  std::string text;  // this (sub)expression as written
  Span span;
  friend bool operator==(const ExprNode&, const ExprNode&) = default;
};

struct Expr {
  std::vector<ExprNode> nodes;
  int root = -1;
  Span span;
  const ExprNode& at(int i) const { return nodes.at(static_cast<size_t>(i)); }
  friend bool operator==(const Expr&, const Expr&) = default;
};

// name=expr, from a variable token ("ts0=common_timestamp.usecs,b=field1").
struct VarDef {
  std::string name;
  Span name_span;
  int expr = -1;  // index into HistCommand::exprs
  friend bool operator==(const VarDef&, const VarDef&) = default;
};

// ---- actions ---------------------------------------------------------------

struct ActionParam {
  std::string text;  // as written, trimmed: "$wakeup_lat", "next_prio", "sched.sched_waking.prio"
  Span span;
  friend bool operator==(const ActionParam&, const ActionParam&) = default;
};

// onmatch(sys.event).<synth>(params) | onmatch(sys.event).trace(<synth>,params)
// onmax($var).save(fields) | .snapshot() | .trace(...) | .<synth>(...); onchange likewise.
struct Action {
  enum class Handler { OnMatch, OnMax, OnChange };
  enum class Kind { Trace, Save, Snapshot };  // Trace: generate a synthetic event
  Handler handler = Handler::OnMatch;
  Kind kind = Kind::Trace;
  std::string match_system;  // onmatch
  std::string match_event;
  Span match_span;        // "sys.event" inside the parentheses
  std::string track_var;  // onmax/onchange: as written, "$wakeup_lat"
  Span track_span;
  std::string action_name;  // "save", "snapshot", "trace" or the synthetic event's name
  Span action_span;
  bool trace_keyword = false;  // written as trace(<synth>, ...)
  std::string synth;           // the synthetic event generated (Trace)
  Span synth_span;
  std::vector<ActionParam> params;  // without the synthetic event's name
  Span span;                        // the whole token
  friend bool operator==(const Action&, const Action&) = default;
};

struct SortKey {
  std::string name;  // field name without modifiers: "bytes_req"
  bool descending = false;
  Span span;  // the whole sort token, e.g. "bytes_req.descending"
  friend bool operator==(const SortKey&, const SortKey&) = default;
};

enum class Control { None, Pause, Continue, Clear };

// ---- filters: the event-filter grammar ------------------------------------

enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, BitAnd, Glob };

// As the kernel's parse_pred() reads a value: a quoted string, or a number
// (a digit or '-' first); and an unquoted word, a string as the kernel's
// documentation writes one (`quoted` false).
struct Literal {
  enum class Kind { Number, String };
  Kind kind = Kind::Number;
  // Number: the value as parsed (kstrtoll/kstrtoull, base 0); `negative` when
  // written with a leading '-', in which case `number` holds the two's
  // complement bit pattern. Not `parsed` when the text is no number
  // ("1b", a value past 64 bits): refused once the field's type is known.
  uint64_t number = 0;
  bool negative = false;
  bool parsed = true;
  std::string text;  // the literal without quotes (also kept for numbers)
  bool quoted = false;
  Span span;
  friend bool operator==(const Literal&, const Literal&) = default;
};

struct Predicate {
  FieldRef field;
  CompareOp op = CompareOp::Eq;
  Span op_span;
  Literal value;
  friend bool operator==(const Predicate&, const Predicate&) = default;
};

// Filter expression tree, stored flat; children are indices into
// Filter::nodes so the whole tree is a copyable value.
struct FilterNode {
  enum class Kind { Predicate, And, Or, Not };
  Kind kind = Kind::Predicate;
  Predicate predicate;  // for Kind::Predicate
  int lhs = -1;         // And/Or: left; Not: operand
  int rhs = -1;         // And/Or: right
  Span span;
  friend bool operator==(const FilterNode&, const FilterNode&) = default;
};

struct Filter {
  std::vector<FilterNode> nodes;
  int root = -1;
  std::string text;  // the filter exactly as written after "if " (trimmed), for printing
  Span span;         // of `text`
  friend bool operator==(const Filter&, const Filter&) = default;
};

// ---- commands --------------------------------------------------------------

struct HistCommand {
  bool remove = false;  // written with a leading '!'
  std::string command;  // the logged command: "hist:" + rest; spans index into it

  std::vector<FieldRef> keys;
  Span keys_span;  // the whole "keys=..." token
  std::vector<FieldRef> vals;
  Span vals_span;
  std::vector<SortKey> sort;
  Span sort_span;
  std::optional<uint64_t> size;  // as written, before rounding
  Span size_span;
  std::optional<std::string> name;  // the histname without "name="
  Span name_span;
  std::optional<std::string> clock;  // clock=<trace clock>
  Span clock_span;                   // of the clock's name
  Control control = Control::None;
  Span control_span;
  bool nohitcount = false;
  Span nohitcount_span;
  std::vector<Expr> exprs;      // what FieldRef::expr and VarDef::expr index
  std::vector<VarDef> vars;     // in the order written
  std::vector<Action> actions;  // in the order written
  std::optional<Filter> filter;
  friend bool operator==(const HistCommand&, const HistCommand&) = default;
};

// Every trigger command besides hist, as the kernel's event triggers
// (Documentation/trace/events.rst, 6.2): each fires on its event, under its
// filter, at most `count` times, and controls tracing —
//   traceon[:count] [if <filter>]        tracing_on to 1
//   traceoff[:count] [if <filter>]       tracing_on to 0
//   snapshot[:count] [if <filter>]       the trace buffer swapped with snapshot
//   stacktrace[:count] [if <filter>]     the kernel stack into the trace buffer
//   enable_event:<system>:<event>[:count] [if <filter>]   that event recorded
//   disable_event:<system>:<event>[:count] [if <filter>]  ... or no longer
//   enable_hist:<system>:<event>[:count] [if <filter>]    its hist triggers continued
//   disable_hist:<system>:<event>[:count] [if <filter>]   ... or paused
// The logged command is the text without a leading '!'.
struct ControlCommand {
  enum class Kind { TraceOn, TraceOff, Snapshot, Stacktrace, EnableEvent, DisableEvent, EnableHist, DisableHist };
  Kind kind = Kind::EnableHist;
  bool remove = false;
  std::string command;
  // The *_event and *_hist kinds' target.
  std::string system;
  Span system_span;
  std::string event;
  Span event_span;
  std::optional<uint64_t> count;  // absent: unlimited
  Span count_span;
  std::optional<Filter> filter;
  // As written and listed: "traceon", "enable_event", ...
  std::string_view name() const;
  bool has_target() const { return kind >= Kind::EnableEvent; }
  bool targets_hist() const { return kind == Kind::EnableHist || kind == Kind::DisableHist; }
  // traceon, enable_event, enable_hist: it turns something on.
  bool enables() const { return kind == Kind::TraceOn || kind == Kind::EnableEvent || kind == Kind::EnableHist; }
  // One of a kind per event (per target for the *_event and *_hist kinds),
  // as the kernel's trigger types: traceon and traceoff are one type,
  // enable_event and disable_event another, enable_hist and disable_hist a
  // third. A second is EEXIST; '!' removes whichever is there.
  bool same_type(const ControlCommand& o) const;
  friend bool operator==(const ControlCommand&, const ControlCommand&) = default;
};

// Everything a trigger file accepts.
using TriggerCommand = std::variant<HistCommand, ControlCommand>;
// The names of the control triggers, as the kernel's trigger file lists
// them under "# Available triggers:" (hist follows them there).
inline constexpr const char* kControlTriggerNames[] = {"traceon",      "traceoff",      "snapshot",    "stacktrace",
                                                       "enable_event", "disable_event", "enable_hist", "disable_hist"};

// A command must be shorter than this: tracefs takes at most a page per
// write(2), and the socket and `histctl check` take the same.
inline constexpr size_t kMaxCommandBytes = 4096;
// A trigger line as histd prints it (the kernel's form, defaults spelled
// out) can be longer than the command that made it. Lines histd printed
// itself come back longer than a page when a saved trigger is restored or
// a listed line names a trigger to remove: those take up to this.
inline constexpr size_t kMaxPrintedCommandBytes = 16 * kMaxCommandBytes;

// Parses "[!]traceon...", "[!]enable_hist:...", ... (ControlCommand).
Result<ControlCommand, Diagnostic> parse_control_trigger(std::string_view line, size_t max_bytes = kMaxCommandBytes);

// Parses one line written to a trigger file (trailing newline and
// surrounding white space allowed), shorter than `max_bytes`.
Result<TriggerCommand, Diagnostic> parse_trigger(std::string_view line, size_t max_bytes = kMaxCommandBytes);

// Parses a hist command ("[!]hist:..." with optional " if <filter>").
Result<HistCommand, Diagnostic> parse_hist(std::string_view line);

// Parses a filter on its own (as written after "if "). `base` is added to
// every span so that callers can place the filter inside a larger command;
// `command` is recorded in diagnostics.
Result<Filter, Diagnostic> parse_filter(std::string_view text, uint32_t base, std::string_view command);

// As written and printed: "hex", "sym-offset", "buckets" (modifier::info(m).name).
std::string_view modifier_name(Modifier m);

// The kernel's errpos(): where `text` first occurs in `command` (0 if
// nowhere). Several kernel errors place their caret this way, so a caret
// can land on an earlier copy of the offending text.
uint32_t errpos(std::string_view command, std::string_view text);  // "hex", "sym-offset", "buckets", ...

}  // namespace histd::parse
