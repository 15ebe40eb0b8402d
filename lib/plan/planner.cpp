// SPDX-License-Identifier: GPL-2.0-only
#include <algorithm>
#include <bit>
#include <optional>

#include "histd/plan.h"
#include "histd/plan_memory.h"
#include "plan/fields.h"
#include "plan/variables.h"

namespace histd::plan {

namespace {

constexpr uint32_t kMaxStringKey = 256;  // MAX_FILTER_STR_VAL

Unexpected<Diagnostic> error(std::string_view command, ErrorCode code, Span span, std::string detail = {}) {
  return unexpected(Diagnostic{code, span, std::string(command), std::move(detail)});
}

Unexpected<Diagnostic> error(const parse::HistCommand& cmd, ErrorCode code, Span span, std::string detail = {}) {
  return error(cmd.command, code, span, std::move(detail));
}

Span name_span(const parse::FieldRef& ref) {
  return Span{ref.span.begin, static_cast<uint32_t>(ref.span.begin + ref.name.size())};
}

std::string field_spec(const std::string& name, const std::optional<parse::ModifierUse>& mod) {
  if (!mod) return name;
  return name + "." + modifier::printed(mod->kind, mod->buckets);
}

// A synthetic event's stack field ("unsigned long[] stack"): a __data_loc
// array of a frame count and the frames.
bool is_stack_field(const FieldAccess& a) {
  return a.source == Source::Record && a.type.starts_with("__data_loc ") && a.type.ends_with("long[]");
}

// Whether `needs` admits the field `a`.
bool admits(modifier::Needs needs, const FieldAccess& a) {
  switch (needs) {
    case modifier::Needs::Number:
      return true;
    case modifier::Needs::CommonPid:
      return a.source == Source::CommonPid;
    case modifier::Needs::Timestamp:
      return a.source == Source::Timestamp;
    case modifier::Needs::Stack:
      return is_stack_field(a);
  }
  return false;
}

// Looks the field up and rejects what histd cannot read; the kernel allows
// one modifier per field.
Result<ResolvedField, Diagnostic> resolve(const parse::HistCommand& cmd, const catalog::EventFormat& format,
                                          const parse::FieldRef& ref) {
  auto r = resolve_field(format, ref.name);
  if (!r) return error(cmd, ErrorCode::FieldNotFound, name_span(ref));
  if (!r->readable) return error(cmd, ErrorCode::Unsupported, name_span(ref), "BPF programs cannot read " + ref.name);
  if (ref.modifiers.size() > 1) return error(cmd, ErrorCode::BadFieldModifier, ref.modifiers[1].span);
  return *r;
}

// `stack.stacktrace`: a stack field's frames as the key, printed as the
// kernel prints them ("stack.stacktrace" and the frames).
Result<KeyField, Diagnostic> stack_field_key(const parse::HistCommand& cmd, const ResolvedField& r,
                                             const parse::ModifierUse& mod, KeyField key) {
  if (!admits(modifier::Needs::Stack, r.access)) return error(cmd, ErrorCode::BadFieldModifier, mod.span);
  key.name = r.name + ".stacktrace";
  key.display = table::KeyDisplay::Stacktrace;
  key.size = 8 * kStackDepth;
  return key;
}

Result<KeyField, Diagnostic> plan_key(const parse::HistCommand& cmd, const catalog::EventFormat& format,
                                      const parse::FieldRef& ref, bool opaque) {
  auto r = resolve(cmd, format, ref);
  if (!r) return unexpected(std::move(r).error());
  std::optional<parse::ModifierUse> mod;
  if (!ref.modifiers.empty()) mod = ref.modifiers[0];

  KeyField key;
  key.name = r->name;
  key.printed = field_spec(r->name, mod);
  key.access = r->access;
  if (r->access.source == Source::Hitcount) return error(cmd, ErrorCode::FieldNotFound, name_span(ref));
  if (r->access.source == Source::Stacktrace) {
    if (mod) return error(cmd, ErrorCode::BadFieldModifier, mod->span);
    key.display = table::KeyDisplay::Stacktrace;
    key.size = r->access.size;
    return key;
  }
  if (mod && modifier::info(mod->kind).needs == modifier::Needs::Stack) return stack_field_key(cmd, *r, *mod, key);
  const bool is_string = is_string_kind(r->access.kind);
  if (!is_string && r->access.kind != catalog::FieldKind::Integer)
    return error(cmd, ErrorCode::Unsupported, name_span(ref), "arrays as keys");
  if (is_string) {
    if (mod) return error(cmd, ErrorCode::BadFieldModifier, mod->span);
    key.display = table::KeyDisplay::String;
    if (r->access.kind == catalog::FieldKind::CharArray) {
      // One byte more than the field so the key is always NUL-terminated.
      key.size = std::min<uint32_t>((r->access.size + 1 + 7) & ~7u, kMaxStringKey);
    } else {
      key.size = kMaxStringKey;  // dynamic strings: as long as the kernel keeps them
    }
    return key;
  }

  if (!mod) return key;
  const modifier::ModifierInfo& info = modifier::info(mod->kind);
  if (info.key == modifier::Use::Unsupported)
    return error(cmd, ErrorCode::Unsupported, mod->span, "." + std::string(info.name));
  if (info.key != modifier::Use::Allowed || !admits(info.needs, r->access))
    return error(cmd, ErrorCode::BadFieldModifier, mod->span);
  // Bucket bounds would say where the addresses lie.
  if (opaque && r->access.kernel_address && info.transform == KeyTransform::Buckets)
    return error(cmd, ErrorCode::AddressHidden, mod->span, hidden_address_use(r->name));
  key.display = info.key_display;
  key.transform = info.transform;
  if (info.takes_number) key.buckets = mod->buckets;
  return key;
}

Result<ValField, Diagnostic> plan_val(const parse::HistCommand& cmd, const catalog::EventFormat& format,
                                      const parse::FieldRef& ref, bool opaque) {
  auto r = resolve(cmd, format, ref);
  if (!r) return unexpected(std::move(r).error());
  std::optional<parse::ModifierUse> mod;
  if (!ref.modifiers.empty()) mod = ref.modifiers[0];
  if (r->access.kind != catalog::FieldKind::Integer)
    return error(cmd, is_string_kind(r->access.kind) ? ErrorCode::StringValue : ErrorCode::Unsupported, name_span(ref),
                 is_string_kind(r->access.kind) ? "" : "arrays as values");

  ValField val;
  val.name = r->name;
  val.printed = field_spec(r->name, mod);
  val.access = r->access;
  if (!mod) return val;
  const modifier::ModifierInfo& info = modifier::info(mod->kind);
  if (info.value != modifier::Use::Allowed || !admits(info.needs, r->access))
    return error(cmd, ErrorCode::BadFieldModifier, mod->span);
  // A sum of addresses renders hidden; its share of the total would not.
  if (opaque && r->access.kernel_address && info.val_display != table::ValDisplay::Hex)
    return error(cmd, ErrorCode::AddressHidden, mod->span, hidden_address_use(r->name));
  val.display = info.val_display;
  val.usecs = info.transform == KeyTransform::Usecs;
  return val;
}

// Numeric constant of a filter predicate, checked and truncated the way the
// kernel's filter parser does (kstrtoll for signed fields, kstrtoull else).
// Where the kernel's parse_pred() puts the caret for a value's error: one
// past the value's first character.
Span past_first(Span value) { return Span{value.begin + 1, value.begin + 2}; }

Result<uint64_t, Diagnostic> filter_constant(std::string_view cmd, const FieldAccess& field,
                                             const parse::Literal& lit) {
  if (!lit.parsed || (lit.negative && !field.is_signed))
    return error(cmd, ErrorCode::FilterIllegalIntval, past_first(lit.span));
  uint64_t v = lit.number;
  if (field.size < 8) {
    const unsigned bits = field.size * 8;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    v &= mask;
    if (field.is_signed && (v >> (bits - 1)) & 1) v |= ~mask;
  }
  return v;
}

// One predicate's compare term, typed against the field it names.
Result<FilterTerm, Diagnostic> type_predicate(std::string_view cmd, const catalog::EventFormat& format,
                                              const parse::Predicate& p, bool opaque) {
  auto r = resolve_field(format, p.field.name);
  // The caret one past the name's end, as the kernel's.
  if (!r || r->access.source == Source::Hitcount || r->access.source == Source::Timestamp ||
      r->access.source == Source::Stacktrace)
    return error(cmd, ErrorCode::FilterFieldNotFound, Span{p.field.span.end + 1, p.field.span.end + 2});
  if (!r->readable)
    return error(cmd, ErrorCode::Unsupported, name_span(p.field), "BPF programs cannot read " + p.field.name);
  if (!p.field.modifiers.empty())
    return error(cmd, ErrorCode::Unsupported, p.field.modifiers[0].span, "filter field modifiers");
  // Which events count would bisect the address.
  if (opaque && r->access.kernel_address)
    return error(cmd, ErrorCode::AddressHidden, name_span(p.field), hidden_address_use(p.field.name));
  // As the kernel's parse_pred() decides, in its order: a quoted string
  // takes ==, != and ~ on a string field; a number any other operator on a
  // number field.
  const Span at_value = past_first(p.value.span);
  const bool string_value = p.value.kind == parse::Literal::Kind::String;
  const bool string_op = p.op == parse::CompareOp::Eq || p.op == parse::CompareOp::Ne || p.op == parse::CompareOp::Glob;
  if (string_value && !string_op) return error(cmd, ErrorCode::FilterIllegalFieldOp, at_value);
  // An unquoted word is a string only where a string is wanted.
  if (string_value && !p.value.quoted && !is_string_kind(r->access.kind))
    return error(cmd, ErrorCode::FilterInvalidValue, at_value);
  if (string_value != is_string_kind(r->access.kind))
    return error(cmd, string_value ? ErrorCode::FilterExpectDigit : ErrorCode::FilterExpectString, at_value);
  FilterTerm term;
  term.kind = FilterTerm::Kind::Compare;
  term.field = r->access;
  term.op = p.op;
  if (is_string_kind(r->access.kind)) {
    if (p.value.text.size() > 255) return error(cmd, ErrorCode::FilterOperandTooLong, p.value.span);
    term.is_string = true;
    term.match = p.op == parse::CompareOp::Glob ? compile_glob(p.value.text) : exact_match(p.value.text);
    return term;
  }
  if (r->access.kind != catalog::FieldKind::Integer || p.op == parse::CompareOp::Glob)
    return error(cmd, ErrorCode::FilterIllegalFieldOp, at_value);
  auto c = filter_constant(cmd, r->access, p.value);
  if (!c) return unexpected(std::move(c).error());
  term.constant = *c;
  return term;
}

Result<TypedFilter, Diagnostic> type_filter(std::string_view cmd, const catalog::EventFormat& format,
                                            const parse::Filter& filter, bool opaque) {
  TypedFilter out;
  out.terms.reserve(filter.nodes.size());
  for (const parse::FilterNode& node : filter.nodes) {
    FilterTerm term;
    switch (node.kind) {
      case parse::FilterNode::Kind::And:
        term.kind = FilterTerm::Kind::And;
        break;
      case parse::FilterNode::Kind::Or:
        term.kind = FilterTerm::Kind::Or;
        break;
      case parse::FilterNode::Kind::Not:
        term.kind = FilterTerm::Kind::Not;
        break;
      case parse::FilterNode::Kind::Predicate: {
        auto typed = type_predicate(cmd, format, node.predicate, opaque);
        if (!typed) return unexpected(std::move(typed).error());
        term = std::move(*typed);
        break;
      }
    }
    term.lhs = node.lhs;
    term.rhs = node.rhs;
    out.terms.push_back(std::move(term));
  }
  out.root = filter.root;
  return out;
}

Result<uint32_t, Diagnostic> table_size(const parse::HistCommand& cmd) {
  if (!cmd.size) return 2048u;
  const uint64_t n = *cmd.size;
  // The kernel takes ilog2(roundup_pow_of_two(n)) and wants it in 7..17.
  if (n == 0 || n > (uint64_t{1} << 17)) return error(cmd, ErrorCode::InvalidSize, cmd.size_span);
  return static_cast<uint32_t>(std::max<uint64_t>(std::bit_ceil(n), 128));
}

}  // namespace

Result<TypedFilter, Diagnostic> plan_filter(const parse::Filter& filter, const catalog::EventFormat& format,
                                            std::string_view command, bool opaque_addresses) {
  return type_filter(command, format, filter, opaque_addresses);
}

namespace {

// A key or value written as "$name" where name is this trigger's variable
// holding a plain field: the kernel's local_field_var_ref() reads it as that
// field.
const parse::FieldRef* own_field_var(const parse::HistCommand& cmd, const catalog::EventFormat& format,
                                     const parse::FieldRef& ref) {
  if (ref.expr < 0) return &ref;
  const parse::Expr& e = cmd.exprs.at(static_cast<size_t>(ref.expr));
  const parse::ExprNode& n = e.at(e.root);
  if (n.kind != parse::ExprNode::Kind::VarRef) return nullptr;
  if (!n.system.empty() && (n.system != format.system || n.event != format.name)) return nullptr;
  for (const parse::VarDef& v : cmd.vars) {
    if (v.name != n.var) continue;
    const parse::Expr& def = cmd.exprs.at(static_cast<size_t>(v.expr));
    const parse::ExprNode& root = def.at(def.root);
    return root.kind == parse::ExprNode::Kind::Field ? &root.field : nullptr;
  }
  return nullptr;
}

bool has_var_ref(const parse::Expr& e) {
  for (const parse::ExprNode& n : e.nodes)
    if (n.kind == parse::ExprNode::Kind::VarRef) return true;
  return false;
}

// A key written as an expression: one that reads a variable is the kernel's
// own error, any other histd's limit.
Unexpected<Diagnostic> expression_key_error(const parse::HistCommand& cmd, const parse::FieldRef& written) {
  const parse::Expr& e = cmd.exprs.at(static_cast<size_t>(written.expr));
  const std::string text(cmd.command.substr(written.span.begin, written.span.end - written.span.begin));
  const uint32_t pos = parse::errpos(cmd.command, text);
  if (has_var_ref(e)) return error(cmd, ErrorCode::InvalidRefKey, Span{pos, pos + static_cast<uint32_t>(text.size())});
  return error(cmd, ErrorCode::Unsupported, written.span, "expressions as keys");
}

// The keys, one after another in the map's key.
Result<Unit, Diagnostic> plan_keys(const parse::HistCommand& cmd, const catalog::EventFormat& format, bool opaque,
                                   HistPlan& plan) {
  if (cmd.keys.empty()) return error(cmd, ErrorCode::MissingKeys, Span{0, 0});
  if (cmd.keys.size() > 3) return error(cmd, ErrorCode::TooManyKeys, cmd.keys[3].span);
  uint32_t offset = 0;
  for (const parse::FieldRef& written : cmd.keys) {
    const parse::FieldRef* field = own_field_var(cmd, format, written);
    if (!field) return expression_key_error(cmd, written);
    auto key = plan_key(cmd, format, *field, opaque);
    if (!key) return unexpected(std::move(key).error());
    key->offset = offset;
    offset += key->size;
    plan.keys.push_back(std::move(*key));
  }
  plan.key_size = offset;
  return Unit{};
}

ValField hitcount_column() {
  ValField hitcount;
  hitcount.name = "hitcount";
  hitcount.printed = "hitcount";
  hitcount.access.source = Source::Hitcount;
  hitcount.access.type = "u64";
  return hitcount;
}

Result<ValField, Diagnostic> plan_expression_val(ExprContext& ctx, const parse::FieldRef& written) {
  auto typed = type_expression(ctx, written.expr);
  if (!typed) return unexpected(std::move(typed).error());
  if (typed->is_string || typed->is_stack) return error(ctx.cmd, ErrorCode::StringValue, written.span);
  ValField val;
  const ExprOp& root = typed->ops.at(static_cast<size_t>(typed->root));
  val.printed = typed->text;
  val.name = typed->text;
  // A variable's value is named as the kernel's hist_field_name() names
  // it: qualified only when written qualified ("$sys.event.var").
  if (root.kind == ExprOp::Kind::Ref && val.printed.starts_with("$")) val.name = val.printed.substr(1);
  val.access.type = typed->type;
  val.expr = std::move(*typed);
  return val;
}

// The values, after the implicit hitcount.
Result<Unit, Diagnostic> plan_vals(ExprContext& ctx) {
  const parse::HistCommand& cmd = ctx.cmd;
  HistPlan& plan = ctx.plan;
  plan.vals.push_back(hitcount_column());
  bool skipped_hitcount = false;
  for (const parse::FieldRef& written : cmd.vals) {
    // The first plain "hitcount" names the implicit counter; anything else
    // (a second one, or hitcount.percent) is a column of its own.
    if (written.name == "hitcount" && written.modifiers.empty() && !skipped_hitcount) {
      skipped_hitcount = true;
      continue;
    }
    if (plan.vals.size() == 3) return error(cmd, ErrorCode::TooManyVals, written.span);
    const parse::FieldRef* field = own_field_var(cmd, ctx.format, written);
    auto val =
        field ? plan_val(cmd, ctx.format, *field, ctx.context.opaque_addresses) : plan_expression_val(ctx, written);
    if (!val) return unexpected(std::move(val).error());
    plan.vals.push_back(std::move(*val));
  }
  return Unit{};
}

Result<Unit, Diagnostic> plan_clock(const parse::HistCommand& cmd, HistPlan& plan) {
  if (!cmd.clock) return Unit{};
  // The trace clocks that count nanoseconds, on the BPF clock that reads
  // them: global/local/perf are sched_clock-like, boot and tai have helpers.
  static const std::pair<const char*, HistPlan::Clock> kClocks[] = {
      {"global", HistPlan::Clock::Mono}, {"local", HistPlan::Clock::Mono},    {"perf", HistPlan::Clock::Mono},
      {"mono", HistPlan::Clock::Mono},   {"mono_raw", HistPlan::Clock::Mono}, {"boot", HistPlan::Clock::Boot},
      {"tai", HistPlan::Clock::Tai}};
  bool known = false;
  for (const auto& [name, source] : kClocks) {
    if (*cmd.clock == name) {
      plan.clock = name;
      plan.clock_source = source;
      known = true;
    }
  }
  if (!known) return error(cmd, ErrorCode::SetClockFail, cmd.clock_span);
  return Unit{};
}

// The column a sort= name picks: hitcount, then a value, then a key.
std::optional<SortKey> sort_column(const HistPlan& plan, const parse::SortKey& s) {
  using Kind = table::SortColumn::Kind;
  if (s.name == "hitcount") return SortKey{{Kind::Value, 0, s.descending}, "hitcount"};
  for (uint32_t i = 1; i < plan.vals.size(); ++i) {
    // "$name" (as the kernel prints a variable's value in sort=) or the name.
    if (plan.vals[i].name == s.name || (s.name.starts_with("$") && plan.vals[i].printed == s.name))
      return SortKey{{Kind::Value, i, s.descending}, plan.vals[i].printed};
  }
  for (uint32_t i = 0; i < plan.keys.size(); ++i) {
    if (plan.keys[i].name == s.name) return SortKey{{Kind::Key, i, s.descending}, plan.keys[i].printed};
  }
  return std::nullopt;
}

Result<Unit, Diagnostic> plan_sort(const parse::HistCommand& cmd, HistPlan& plan) {
  if (cmd.sort.size() > 2) return error(cmd, ErrorCode::TooManySortFields, cmd.sort[2].span);
  for (const parse::SortKey& s : cmd.sort) {
    std::optional<SortKey> key = sort_column(plan, s);
    if (!key) return error(cmd, ErrorCode::InvalidSortField, s.span);
    if (s.descending) key->printed += ".descending";
    plan.sort.push_back(std::move(*key));
  }
  if (plan.sort.empty()) plan.sort.push_back(SortKey{{table::SortColumn::Kind::Value, 0, false}, "hitcount"});
  return Unit{};
}

Result<Unit, Diagnostic> plan_hist_filter(const parse::HistCommand& cmd, const catalog::EventFormat& format,
                                          bool opaque, HistPlan& plan) {
  if (!cmd.filter) return Unit{};
  auto filter = type_filter(cmd.command, format, *cmd.filter, opaque);
  if (!filter) return unexpected(std::move(filter).error());
  plan.filter = std::move(*filter);
  plan.filter_text = cmd.filter->text;
  return Unit{};
}

}  // namespace

Result<HistPlan, Diagnostic> plan_hist(const parse::HistCommand& cmd, const catalog::EventFormat& format,
                                       const PlanContext& context) {
  HistPlan plan;
  ExprContext ctx{cmd, format, context, plan, 0};
  plan.system = format.system;
  plan.event = format.name;
  plan.name = cmd.name;
  plan.control = cmd.control;
  plan.remove = cmd.remove;
  const bool opaque = context.opaque_addresses;
  if (auto r = plan_keys(cmd, format, opaque, plan); !r) return unexpected(std::move(r).error());
  if (auto r = plan_variables(ctx); !r) return unexpected(std::move(r).error());
  if (auto r = plan_vals(ctx); !r) return unexpected(std::move(r).error());
  if (auto r = plan_clock(cmd, plan); !r) return unexpected(std::move(r).error());
  plan.nohitcount = cmd.nohitcount;
  if (plan.nohitcount && plan.vals.size() == 1) return error(cmd, ErrorCode::NeedNohcVal, cmd.nohitcount_span);
  if (auto r = plan_sort(cmd, plan); !r) return unexpected(std::move(r).error());
  auto size = table_size(cmd);
  if (!size) return unexpected(std::move(size).error());
  plan.max_entries = *size;
  if (auto r = plan_actions(ctx); !r) return unexpected(std::move(r).error());
  if (auto r = plan_hist_filter(cmd, format, opaque, plan); !r) return unexpected(std::move(r).error());
  plan.table_map = choose_table_map(plan, context.tables);
  plan.hot_slots = choose_hot_slots(plan);
  return plan;
}

}  // namespace histd::plan
