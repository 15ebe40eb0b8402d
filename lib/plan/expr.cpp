// SPDX-License-Identifier: GPL-2.0-only
// Typing expressions: the kernel's parse_expr() after parsing — operand
// checks (strings, timestamp units), constant folding with the kernel's own
// arithmetic, and the printed form (expr_str()).
#include <bit>

#include <fmt/format.h>

#include "plan/fields.h"
#include "plan/variables.h"

namespace histd::plan {

namespace {

constexpr unsigned kDivShift = 20;  // HIST_DIV_SHIFT

Unexpected<Diagnostic> error_at(const parse::HistCommand& cmd, ErrorCode code, std::string_view text,
                                std::string detail = {}) {
  const uint32_t pos = parse::errpos(cmd.command, text);
  return unexpected(Diagnostic{code, Span{pos, pos + static_cast<uint32_t>(std::max<size_t>(text.size(), 1))},
                               cmd.command, std::move(detail)});
}

uint64_t apply(ExprOp::Kind k, uint64_t a, uint64_t b, DivStrategy how) {
  switch (k) {
    case ExprOp::Kind::Add:
      return a + b;
    case ExprOp::Kind::Sub:
      return a - b;
    case ExprOp::Kind::Mul:
      return a * b;
    case ExprOp::Kind::Div:
      return divide(a, b, how);
    case ExprOp::Kind::Negate:
      return static_cast<uint64_t>(-static_cast<int64_t>(a));
    default:
      return 0;
  }
}

class Typer {
 public:
  Typer(ExprContext& ctx, const parse::Expr& expr) : ctx_(ctx), expr_(expr) {}

  Result<TypedExpr, Diagnostic> run() {
    auto root = node(expr_.root, Use::Direct);
    if (!root) return unexpected(std::move(root).error());
    out_.root = *root;
    const ExprOp& r = out_.ops.at(static_cast<size_t>(out_.root));
    if (out_.is_string || out_.is_stack) {
      out_.ops.clear();
      out_.root = -1;
    } else if (r.kind == ExprOp::Kind::Constant && out_.ops.size() > 1) {
      // Folded: only the constant remains, printed as its value.
      const ExprOp c = r;
      out_.ops = {c};
      out_.root = 0;
    }
    return std::move(out_);
  }

 private:
  struct Facts {
    std::string text;
    std::string type = "u64";
    uint32_t size = 8;
    bool is_signed = false;
    bool usecs = false;
    bool timestamp = false;
    bool is_string = false;
  };

  int push(ExprOp op) {
    out_.ops.push_back(std::move(op));
    return static_cast<int>(out_.ops.size() - 1);
  }

  void set_facts(const Facts& f) {
    out_.text = f.text;
    out_.type = f.type;
    out_.size = f.size;
    out_.is_signed = f.is_signed;
    out_.usecs = f.usecs;
    out_.timestamp = f.timestamp;
    out_.is_string = f.is_string;
  }

  Result<int, Diagnostic> node(int index, Use use) {
    const parse::ExprNode& n = expr_.at(index);
    switch (n.kind) {
      case parse::ExprNode::Kind::Constant: {
        ExprOp op;
        op.kind = ExprOp::Kind::Constant;
        op.constant = n.constant;
        set_facts(Facts{fmt::format("{}", n.constant)});
        return push(op);
      }
      case parse::ExprNode::Kind::Field:
        if (is_stack_field(n.field)) {
          // A variable of the stack at the event: a whole value, no operand.
          if (use != Use::Direct) return error_at(ctx_.cmd, ErrorCode::InvalidStrOperand, n.text);
          return stack();
        }
        return field(n.field, n.text);
      case parse::ExprNode::Kind::VarRef:
        return var_ref(n, use);
      case parse::ExprNode::Kind::Negate: {
        auto operand = node(n.lhs, Use::Operand);
        if (!operand) return operand;
        if (out_.is_string || out_.is_stack)
          return error_at(ctx_.cmd, ErrorCode::InvalidStrOperand, expr_.at(n.lhs).text);
        const ExprOp& o = out_.ops.at(static_cast<size_t>(*operand));
        ExprOp op;
        if (o.kind == ExprOp::Kind::Constant) {
          op.kind = ExprOp::Kind::Constant;
          op.constant = apply(ExprOp::Kind::Negate, o.constant, 0, DivStrategy::Runtime);
          out_.text = fmt::format("{}", op.constant);
          return push(op);
        }
        op.kind = ExprOp::Kind::Negate;
        op.lhs = *operand;
        out_.text = "-(" + out_.text + ")";
        return push(op);
      }
      default:
        return binary(n);
    }
  }

  static bool is_stack_field(const parse::FieldRef& f) {
    return f.modifiers.empty() && (f.name == "common_stacktrace" || f.name == "stacktrace");
  }

  Result<int, Diagnostic> stack() {
    Facts f;
    f.text = "common_stacktrace";
    f.type = "unsigned long[]";
    set_facts(f);
    out_.is_stack = true;
    ExprOp op;
    op.kind = ExprOp::Kind::Constant;  // no value of its own: codegen takes the stack
    return push(op);
  }

  Result<int, Diagnostic> binary(const parse::ExprNode& n) {
    auto lhs = node(n.lhs, Use::Operand);
    if (!lhs) return lhs;
    if (out_.is_string || out_.is_stack) return error_at(ctx_.cmd, ErrorCode::InvalidStrOperand, expr_.at(n.lhs).text);
    const Facts left{out_.text, out_.type, out_.size, out_.is_signed, out_.usecs, out_.timestamp, false};
    auto rhs = node(n.rhs, Use::Operand);
    if (!rhs) return rhs;
    if (out_.is_string || out_.is_stack) return error_at(ctx_.cmd, ErrorCode::InvalidStrOperand, expr_.at(n.rhs).text);
    const bool right_usecs = out_.usecs;
    const std::string right_text = out_.text;
    if (left.usecs != right_usecs)
      return unexpected(Diagnostic{ErrorCode::TimestampMismatch, Span{0, 0}, ctx_.cmd.command, {}});
    ExprOp op;
    const char* sym = "+";
    switch (n.kind) {
      case parse::ExprNode::Kind::Add:
        op.kind = ExprOp::Kind::Add;
        sym = "+";
        break;
      case parse::ExprNode::Kind::Sub:
        op.kind = ExprOp::Kind::Sub;
        sym = "-";
        break;
      case parse::ExprNode::Kind::Mul:
        op.kind = ExprOp::Kind::Mul;
        sym = "*";
        break;
      default:
        op.kind = ExprOp::Kind::Div;
        sym = "/";
        break;
    }
    const ExprOp& l = out_.ops.at(static_cast<size_t>(*lhs));
    const ExprOp& r = out_.ops.at(static_cast<size_t>(*rhs));
    if (op.kind == ExprOp::Kind::Div && r.kind == ExprOp::Kind::Constant) {
      if (r.constant == 0) return error_at(ctx_.cmd, ErrorCode::DivisionByZero, expr_.at(n.rhs).text);
      op.div = div_strategy(r.constant);
      op.divisor = r.constant;
    }
    // The expression takes its first operand's type, as the kernel's does.
    Facts f = left;
    f.usecs = left.usecs;
    f.timestamp = left.timestamp;
    if (l.kind == ExprOp::Kind::Constant && r.kind == ExprOp::Kind::Constant) {
      ExprOp c;
      c.kind = ExprOp::Kind::Constant;
      c.constant = apply(op.kind, l.constant, r.constant, op.div);
      f.text = fmt::format("{}", c.constant);
      set_facts(f);
      return push(c);
    }
    op.lhs = *lhs;
    op.rhs = *rhs;
    f.text = left.text + sym + right_text;
    set_facts(f);
    return push(op);
  }

  Result<int, Diagnostic> field(const parse::FieldRef& ref, const std::string& text) {
    auto r = resolve_field(ctx_.format, ref.name);
    if (!r || r->access.source == Source::Hitcount || r->access.source == Source::Stacktrace)
      return error_at(ctx_.cmd, ErrorCode::FieldNotFound, ref.name);
    if (!r->readable)
      return error_at(ctx_.cmd, ErrorCode::Unsupported, ref.name, "BPF programs cannot read " + ref.name);
    if (ref.modifiers.size() > 1) return error_at(ctx_.cmd, ErrorCode::BadFieldModifier, text);
    if (r->access.kernel_address && ctx_.context.opaque_addresses)
      return error_at(ctx_.cmd, ErrorCode::AddressHidden, ref.name, hidden_address_use(ref.name));
    out_.kernel_address = out_.kernel_address || r->access.kernel_address;
    Facts f;
    f.text = operand_text(ref);
    f.type = r->access.type;
    f.size = r->access.size;
    f.is_signed = r->access.is_signed;
    f.timestamp = r->access.source == Source::Timestamp;
    ExprOp op;
    op.kind = ExprOp::Kind::Field;
    op.access = r->access;
    for (const parse::ModifierUse& m : ref.modifiers) {
      // Display-only modifiers leave the value as it is.
      const modifier::ModifierInfo& info = modifier::info(m.kind);
      if (info.operand != modifier::Use::Allowed) return error_at(ctx_.cmd, ErrorCode::BadFieldModifier, text);
      if (info.operand_needs == modifier::Needs::Timestamp && !f.timestamp)
        return error_at(ctx_.cmd, ErrorCode::BadFieldModifier, text);
      if (info.operand_needs == modifier::Needs::CommonPid && r->access.source != Source::CommonPid)
        return error_at(ctx_.cmd, ErrorCode::BadFieldModifier, text);
      if (info.transform == KeyTransform::Usecs) {
        f.usecs = true;
        op.usecs = true;
      }
    }
    if (is_string_kind(r->access.kind)) {
      f.is_string = true;
      f.size = r->access.size;
      out_.string_field = r->access;
    } else if (r->access.kind != catalog::FieldKind::Integer) {
      return error_at(ctx_.cmd, ErrorCode::Unsupported, ref.name, "arrays in expressions");
    }
    if (f.timestamp) f.type = "u64";
    set_facts(f);
    return push(op);
  }

  Result<int, Diagnostic> var_ref(const parse::ExprNode& n, Use use) {
    const parse::HistCommand& cmd = ctx_.cmd;
    const bool qualified = !n.system.empty();
    const bool names_this_event = !qualified || (n.system == ctx_.format.system && n.event == ctx_.format.name);
    // This trigger's own variables first.
    if (names_this_event) {
      for (size_t i = 0; i < cmd.vars.size(); ++i) {
        if (cmd.vars[i].name != n.var) continue;
        const parse::Expr& def = cmd.exprs.at(static_cast<size_t>(cmd.vars[i].expr));
        const parse::ExprNode& root = def.at(def.root);
        if (root.kind == parse::ExprNode::Kind::Field && !is_stack_field(root.field))
          return field(root.field, root.text);
        if (i >= ctx_.vars_done) return error_at(cmd, ErrorCode::VarNotFound, n.text, "defined after its use");
        const Variable& v = ctx_.plan.vars[i];
        VarRef ref;
        ref.system = ctx_.format.system;
        ref.event = ctx_.format.name;
        ref.name = v.name;
        ref.self = true;
        ref.slot = v.slot;
        ref.blob_offset = v.blob_offset;
        ref.blob_size = v.blob_size;
        return reference(ref, v.expr, n, use);
      }
    }
    const RegisteredVar* found = nullptr;
    for (const RegisteredVar& rv : ctx_.context.vars) {
      if (rv.name != n.var) continue;
      if (qualified && (rv.system != n.system || rv.event != n.event)) continue;
      if (found) return error_at(cmd, ErrorCode::VarNotUnique, n.text);
      found = &rv;
    }
    if (!found) return error_at(cmd, ErrorCode::VarNotFound, n.text);
    VarRef ref;
    ref.system = found->system;
    ref.event = found->event;
    ref.name = found->name;
    ref.owner = found->owner;
    ref.slot = found->slot;
    ref.owner_key_size = found->key_size;
    ref.owner_record_size = found->record_size;
    ref.owner_record_offset = found->record_offset;
    ref.blob_offset = found->blob_offset;
    ref.blob_size = found->blob_size;
    ref.owner_sole_var = found->sole;
    return reference(ref, found->type, n, use);
  }

  Result<int, Diagnostic> reference(VarRef ref, const TypedExpr& type, const parse::ExprNode& n, Use use) {
    // A string or stack is a whole value: never an operand.
    if ((type.is_string || type.is_stack) && use == Use::Operand)
      return error_at(ctx_.cmd, ErrorCode::InvalidStrOperand, n.text);
    if (type.kernel_address && ctx_.context.opaque_addresses)
      return error_at(ctx_.cmd, ErrorCode::AddressHidden, n.text, hidden_address_use(n.text));
    out_.kernel_address = out_.kernel_address || type.kernel_address;
    ref.read_once = use == Use::Operand && !ref.self;
    std::vector<VarRef>& refs = ctx_.plan.refs;
    int index = -1;
    for (size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].owner == ref.owner && refs[i].self == ref.self && refs[i].slot == ref.slot &&
          refs[i].name == ref.name) {
        refs[i].read_once = refs[i].read_once || ref.read_once;
        index = static_cast<int>(i);
      }
    }
    if (index < 0) {
      if (refs.size() == 16) return error_at(ctx_.cmd, ErrorCode::TooManyVars, n.text, "more than 16 references");
      refs.push_back(ref);
      index = static_cast<int>(refs.size() - 1);
    }
    Facts f;
    f.text = n.system.empty() ? "$" + n.var : "$" + n.system + "." + n.event + "." + n.var;
    f.type = type.type;
    f.size = type.size;
    f.is_signed = type.is_signed;
    f.usecs = type.usecs;
    f.timestamp = type.timestamp;
    f.is_string = type.is_string;
    set_facts(f);
    out_.is_stack = type.is_stack;
    if (type.is_string || type.is_stack) out_.blob_ref = index;
    ExprOp op;
    op.kind = ExprOp::Kind::Ref;
    op.ref = index;
    return push(op);
  }

  ExprContext& ctx_;
  const parse::Expr& expr_;
  TypedExpr out_;
};

}  // namespace

DivStrategy div_strategy(uint64_t d) {
  if (std::has_single_bit(d)) return DivStrategy::Shift;
  if (d <= (uint64_t{1} << kDivShift)) return DivStrategy::MultShift;
  return DivStrategy::Plain;
}

uint64_t divide(uint64_t x, uint64_t d, DivStrategy how) {
  switch (how) {
    case DivStrategy::Runtime:
    case DivStrategy::Plain:
      return d == 0 ? ~uint64_t{0} : x / d;
    case DivStrategy::Shift:
      return x >> std::countr_zero(d);
    case DivStrategy::MultShift:
      if (x < (uint64_t{1} << kDivShift)) {
        const uint64_t mult = (uint64_t{1} << kDivShift) / d;
        return (x * mult + ((uint64_t{1} << kDivShift) - 1)) >> kDivShift;
      }
      return x / d;
  }
  return 0;
}

std::string hidden_address_use(std::string_view name) {
  return std::string(name) +
         " holds a kernel address: it may be a key or a value, but not compared, computed with or copied";
}

std::string operand_text(const parse::FieldRef& ref) {
  std::string s = ref.name;
  for (const parse::ModifierUse& m : ref.modifiers) {
    s += '.';
    s += modifier::printed(m.kind, m.buckets);
  }
  return s;
}

Result<TypedExpr, Diagnostic> type_expression(ExprContext& ctx, int index) {
  const parse::Expr& e = ctx.cmd.exprs.at(static_cast<size_t>(index));
  Typer typer(ctx, e);
  return typer.run();
}

}  // namespace histd::plan
