// SPDX-License-Identifier: GPL-2.0-only
// Expressions, split exactly as the kernel's parse_expr() splits them: find
// the right-most '-' or '+' (else '/' or '*'), make it the root, recurse on
// both sides. String splitting rather than a grammar, because the kernel's
// quirks (a '-' inside a modifier, unary minus only at the root, the
// subexpression count, errpos() carets) follow from it.
#include "parse/hist_parts.h"
#include "parse/text.h"

namespace histd::parse {

namespace {

constexpr unsigned kMaxSubexprs = 3;

// The right-most '-' that is an operator: ".sym-offset" is a modifier (the
// kernel rewrites it before splitting for the same reason).
size_t last_minus(std::string_view s) {
  size_t pos = s.size();
  while (pos > 0) {
    pos = s.rfind('-', pos - 1);
    if (pos == std::string_view::npos) return pos;
    if (pos >= 4 && s.substr(pos - 4, 4) == ".sym" && s.substr(pos + 1).starts_with("offset")) {
      if (pos == 0) return std::string_view::npos;
      continue;
    }
    return pos;
  }
  return std::string_view::npos;
}

enum class Op { None, UnaryMinus, Minus, Plus, Div, Mult };

Op root_operator(std::string_view s, size_t& sep) {
  const size_t minus = last_minus(s);
  if (minus == 0) {
    sep = 0;
    return Op::UnaryMinus;
  }
  const size_t plus = s.rfind('+');
  const bool has_minus = minus != std::string_view::npos;
  const bool has_plus = plus != std::string_view::npos;
  if (has_minus || has_plus) {
    if (has_plus && (!has_minus || plus > minus)) {
      sep = plus;
      return Op::Plus;
    }
    sep = minus;
    return Op::Minus;
  }
  const size_t div = s.rfind('/');
  const size_t mult = s.rfind('*');
  const bool has_div = div != std::string_view::npos;
  const bool has_mult = mult != std::string_view::npos;
  if (has_mult && (!has_div || mult > div)) {
    sep = mult;
    return Op::Mult;
  }
  if (has_div) {
    sep = div;
    return Op::Div;
  }
  return Op::None;
}

class ExprParser {
 public:
  ExprParser(HistCommand& cmd, Expr& expr) : cmd_(cmd), expr_(expr) {}

  Result<int, Diagnostic> expression(const Piece& p) {
    if (subexprs_ > kMaxSubexprs) return fail(ErrorCode::TooManySubexpr, p.text);
    size_t sep = 0;
    const Op op = root_operator(p.text, sep);
    if (op == Op::None) return atom(p);
    if (op == Op::UnaryMinus) return unary(p);
    ++subexprs_;
    const Piece lhs_text = p.sub(0, sep);
    const Piece rhs_text = p.sub(sep + 1);
    if (lhs_text.text.empty() || rhs_text.text.empty())
      return parse_error(cmd_, ErrorCode::MalformedAssignment, p.span(), "an operator needs two operands");
    auto lhs = expression(lhs_text);
    if (!lhs) return lhs;
    auto rhs = expression(rhs_text);
    if (!rhs) return rhs;
    ExprNode n;
    switch (op) {
      case Op::Minus:
        n.kind = ExprNode::Kind::Sub;
        break;
      case Op::Plus:
        n.kind = ExprNode::Kind::Add;
        break;
      case Op::Div:
        n.kind = ExprNode::Kind::Div;
        break;
      case Op::Mult:
        n.kind = ExprNode::Kind::Mul;
        break;
      default:
        break;
    }
    n.lhs = *lhs;
    n.rhs = *rhs;
    return add(std::move(n), p);
  }

 private:
  Unexpected<Diagnostic> fail(ErrorCode code, std::string_view text) const {
    const uint32_t pos = errpos(cmd_.command, text);
    return parse_error(cmd_, code, Span{pos, pos + static_cast<uint32_t>(std::max<size_t>(text.size(), 1))});
  }

  int add(ExprNode n, const Piece& p) {
    n.text = std::string(p.text);
    n.span = p.span();
    expr_.nodes.push_back(std::move(n));
    return static_cast<int>(expr_.nodes.size() - 1);
  }

  // -(expr): the only unary minus, and only as the whole (sub)expression.
  Result<int, Diagnostic> unary(const Piece& p) {
    Piece inner = p.sub(1);
    if (inner.text.empty() || inner.text.front() != '(')
      return parse_error(cmd_, ErrorCode::MalformedAssignment, p.span(), "unary minus needs parentheses: -(...)");
    inner = inner.sub(1);
    const size_t close = inner.text.rfind(')');
    if (close == std::string_view::npos) return fail(ErrorCode::NoClosingParen, inner.text);
    if (close + 1 != inner.text.size()) return fail(ErrorCode::UnaryMinusSubexpr, inner.text);
    auto operand = expression(inner.sub(0, close));
    if (!operand) return operand;
    ExprNode n;
    n.kind = ExprNode::Kind::Negate;
    n.lhs = *operand;
    return add(std::move(n), p);
  }

  Result<int, Diagnostic> atom(const Piece& p) {
    if (p.text.empty()) return parse_error(cmd_, ErrorCode::FieldNotFound, p.span());
    ExprNode n;
    if (std::isdigit(static_cast<unsigned char>(p.text.front()))) {
      auto v = parse_u64(p.text);
      if (!v || p.text.size() > 21) return fail(ErrorCode::ExpectNumber, p.text);
      n.kind = ExprNode::Kind::Constant;
      n.constant = *v;
      return add(std::move(n), p);
    }
    // $var or system.event.$var; also $system.event.var, the spelling the
    // kernel prints a qualified reference in (hist_field_name), so that a
    // printed trigger line parses back.
    std::string_view var = p.text;  // "$name", or "name" in the printed spelling
    const bool dollar_first = p.text.starts_with("$");
    const std::string_view qualified = dollar_first ? p.text.substr(1) : p.text;
    const size_t first_dot = qualified.find('.');
    const size_t second_dot = first_dot == std::string_view::npos ? first_dot : qualified.find('.', first_dot + 1);
    bool is_ref = dollar_first;
    bool printed_spelling = false;  // $system.event.var: no '$' before the name
    if (second_dot != std::string_view::npos && (dollar_first || qualified.substr(second_dot + 1).starts_with("$"))) {
      n.system = std::string(qualified.substr(0, first_dot));
      n.event = std::string(qualified.substr(first_dot + 1, second_dot - first_dot - 1));
      var = qualified.substr(second_dot + 1);
      is_ref = true;
      printed_spelling = dollar_first;
    }
    if (is_ref) {
      if (var.starts_with("$") == printed_spelling) return fail(ErrorCode::VarNotFound, p.text);
      if (!printed_spelling) var.remove_prefix(1);
      if (var.empty() || !is_ident_start(var.front())) return fail(ErrorCode::VarNotFound, p.text);
      for (char c : var)
        if (!is_ident(c)) return fail(ErrorCode::VarNotFound, p.text);
      n.kind = ExprNode::Kind::VarRef;
      n.var = std::string(var);
      return add(std::move(n), p);
    }
    auto f = parse_field_ref(cmd_, p);
    if (!f) return unexpected(std::move(f).error());
    n.kind = ExprNode::Kind::Field;
    n.field = std::move(*f);
    return add(std::move(n), p);
  }

  HistCommand& cmd_;
  Expr& expr_;
  unsigned subexprs_ = 0;
};

}  // namespace

bool is_expression(std::string_view text) {
  if (text.find('$') != std::string_view::npos) return true;
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) return true;
  size_t sep = 0;
  return root_operator(text, sep) != Op::None;
}

Result<int, Diagnostic> parse_expression(HistCommand& cmd, const Piece& text) {
  Expr expr;
  expr.span = text.span();
  ExprParser parser(cmd, expr);
  auto root = parser.expression(text);
  if (!root) return unexpected(std::move(root).error());
  expr.root = *root;
  cmd.exprs.push_back(std::move(expr));
  return static_cast<int>(cmd.exprs.size() - 1);
}

uint32_t errpos(std::string_view command, std::string_view text) {
  if (text.empty()) return 0;
  const size_t at = command.find(text);
  return at == std::string_view::npos ? 0 : static_cast<uint32_t>(at);
}

}  // namespace histd::parse
