// SPDX-License-Identifier: GPL-2.0-only
// The event-filter grammar, recursive descent:
//   or   := and ('||' and)*
//   and  := not ('&&' not)*
//   not  := '!' not | '(' or ')' | predicate
//   predicate := field op value
#include "histd/parse.h"
#include "parse/text.h"

namespace histd::parse {

namespace {

constexpr size_t kMaxOperand = 255;
// Parentheses and '!' nest by recursion: bound it so no input can exhaust
// the stack (found by fuzzing).
constexpr int kMaxDepth = 64;
// Terms are bounded too: later stages walk the tree recursively.
constexpr size_t kMaxTerms = 1024;

class FilterParser {
 public:
  FilterParser(std::string_view text, uint32_t base, std::string_view command)
      : text_(text), base_(base), command_(command) {}

  Result<Filter, Diagnostic> parse() {
    Filter f;
    // The filter is kept as written and printed back in the trigger file,
    // `histctl list` and the state file: a newline in it would forge lines
    // there. A NUL ends the kernel's copy of the command (it would never
    // store what follows). Refused wherever they are, quoted or not.
    if (const size_t bad = text_.find_first_of(std::string_view("\n\r\0", 3)); bad != std::string_view::npos)
      return fail(ErrorCode::FilterControlChar, bad, bad + 1);
    skip_space();
    if (pos_ == text_.size()) return fail(ErrorCode::FilterNoFilter, 0, 0);
    auto root = parse_or();
    if (!root) return unexpected(std::move(root).error());
    skip_space();
    if (pos_ < text_.size()) {
      if (text_[pos_] == ')') return fail(ErrorCode::FilterTooManyClose, pos_, pos_ + 1);
      return fail(ErrorCode::FilterInvalid, pos_, text_.size());
    }
    f.nodes = std::move(nodes_);
    f.root = *root;
    f.text = std::string(text_);
    f.span = span(0, text_.size());
    return f;
  }

 private:
  Span span(size_t b, size_t e) const {
    return Span{static_cast<uint32_t>(base_ + b), static_cast<uint32_t>(base_ + e)};
  }
  Unexpected<Diagnostic> fail(ErrorCode code, size_t b, size_t e) const {
    return unexpected(Diagnostic{code, span(b, e), std::string(command_), {}});
  }
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  bool at(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }

  int add(FilterNode n) {
    if (n.kind == FilterNode::Kind::Predicate) ++terms_;
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size() - 1);
  }

  Result<int, Diagnostic> parse_or() {
    const size_t start = pos_;
    auto lhs = parse_and();
    if (!lhs) return lhs;
    int node = *lhs;
    for (;;) {
      skip_space();
      if (!at("||")) return node;
      pos_ += 2;
      auto rhs = parse_and();
      if (!rhs) return rhs;
      node = add(FilterNode{FilterNode::Kind::Or, {}, node, *rhs, span(start, pos_)});
    }
  }

  Result<int, Diagnostic> parse_and() {
    const size_t start = pos_;
    auto lhs = parse_not();
    if (!lhs) return lhs;
    int node = *lhs;
    for (;;) {
      skip_space();
      if (!at("&&")) return node;
      pos_ += 2;
      auto rhs = parse_not();
      if (!rhs) return rhs;
      node = add(FilterNode{FilterNode::Kind::And, {}, node, *rhs, span(start, pos_)});
    }
  }

  Result<int, Diagnostic> parse_not() {
    skip_space();
    const size_t start = pos_;
    if (pos_ == text_.size()) return fail(ErrorCode::FilterInvalid, pos_, pos_);
    if (depth_ >= kMaxDepth) return fail(ErrorCode::FilterTooManyOpen, pos_, pos_ + 1);
    struct Nest {
      int& d;
      explicit Nest(int& depth) : d(++depth) {}
      ~Nest() { --d; }
    } nest(depth_);
    if (text_[pos_] == '!' && !at("!=")) {
      ++pos_;
      auto operand = parse_not();
      if (!operand) return operand;
      return add(FilterNode{FilterNode::Kind::Not, {}, *operand, -1, span(start, pos_)});
    }
    if (text_[pos_] == '(') {
      ++pos_;
      auto inner = parse_or();
      if (!inner) return inner;
      skip_space();
      if (pos_ == text_.size() || text_[pos_] != ')') return fail(ErrorCode::FilterTooManyOpen, start, start + 1);
      ++pos_;
      return inner;
    }
    return parse_predicate();
  }

  Result<int, Diagnostic> parse_predicate() {
    const size_t start = pos_;
    if (terms_ >= kMaxTerms) return fail(ErrorCode::FilterTooManyPreds, pos_, pos_ + 1);
    Predicate p;
    // field
    if (!is_ident_start(text_[pos_])) {
      if (text_[pos_] == ')') return fail(ErrorCode::FilterTooManyClose, pos_, pos_ + 1);
      return fail(ErrorCode::FilterInvalid, pos_, pos_ + 1);
    }
    while (pos_ < text_.size() && is_ident(text_[pos_])) ++pos_;
    p.field.name = std::string(text_.substr(start, pos_ - start));
    if (pos_ < text_.size() && text_[pos_] == '.') {
      // Filter-only field modifiers (.ustring, .function) are not supported.
      const size_t mod = ++pos_;
      while (pos_ < text_.size() && (is_ident(text_[pos_]) || text_[pos_] == '-')) ++pos_;
      return unexpected(
          Diagnostic{ErrorCode::Unsupported, span(mod, pos_), std::string(command_), "filter field modifiers"});
    }
    p.field.span = span(start, pos_);
    if (p.field.name.size() > kMaxOperand) return fail(ErrorCode::FilterOperandTooLong, start, pos_);
    // operator
    skip_space();
    const size_t op_start = pos_;
    static constexpr std::pair<std::string_view, CompareOp> kOps[] = {
        {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}, {"<=", CompareOp::Le},    {">=", CompareOp::Ge},
        {"<", CompareOp::Lt},  {">", CompareOp::Gt},  {"&", CompareOp::BitAnd}, {"~", CompareOp::Glob}};
    bool found = false;
    for (const auto& [text, op] : kOps) {
      if (at(text) && !(text == "&" && at("&&"))) {
        p.op = op;
        pos_ += text.size();
        found = true;
        break;
      }
    }
    if (!found) {
      // "=" for "==" and anything else that is no operator.
      size_t end = pos_;
      while (end < text_.size() && std::string_view("=!<>&~|").find(text_[end]) != std::string_view::npos) ++end;
      // The caret one past where the operator should be, as the kernel's.
      return fail(ErrorCode::FilterInvalidOp, op_start + 1, std::max(end, op_start + 1) + 1);
    }
    p.op_span = span(op_start, pos_);
    // value
    skip_space();
    auto value = parse_value();
    if (!value) return unexpected(std::move(value).error());
    p.value = std::move(*value);
    return add(FilterNode{FilterNode::Kind::Predicate, std::move(p), -1, -1, span(start, pos_)});
  }

  // The kernel's parse_pred() places a value's errors one past the value's
  // first character (its position counts from after the predicate's
  // first character); so does histd, that the carets are the same.
  Result<Literal, Diagnostic> parse_value() {
    Literal lit;
    const size_t start = pos_;
    // No value, or an operator where it should be ("a === 1").
    if (pos_ == text_.size() || std::string_view("=!<>&|~(").find(text_[pos_]) != std::string_view::npos)
      return fail(ErrorCode::FilterInvalidValue, start + 1, start + 2);
    const char q = text_[pos_];
    if (q == '"' || q == '\'') {
      const size_t close = text_.find(q, pos_ + 1);
      if (close == std::string_view::npos) return fail(ErrorCode::FilterMissingQuote, start, text_.size());
      lit.kind = Literal::Kind::String;
      lit.quoted = true;
      lit.text = std::string(text_.substr(pos_ + 1, close - pos_ - 1));
      pos_ = close + 1;
      lit.span = span(start, pos_);
      if (lit.text.size() > kMaxOperand) return fail(ErrorCode::FilterOperandTooLong, start, pos_);
      return lit;
    }
    while (pos_ < text_.size() && !is_space(text_[pos_]) && text_[pos_] != ')' && !at("&&") && !at("||")) ++pos_;
    lit.text = std::string(text_.substr(start, pos_ - start));
    lit.span = span(start, pos_);
    if (lit.text.size() > kMaxOperand) return fail(ErrorCode::FilterOperandTooLong, start, pos_);
    std::string_view digits = lit.text;
    const bool negative = !digits.empty() && digits[0] == '-';
    if (negative) digits.remove_prefix(1);
    // An unquoted word is a string, as the kernel's documentation writes
    // one (filename==/usr/bin/wget); its parser wants quotes since.
    if (!negative && (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits[0])))) {
      lit.kind = Literal::Kind::String;
      return lit;
    }
    lit.kind = Literal::Kind::Number;
    lit.negative = negative;
    lit.parsed = false;
    if (!digits.empty() && std::isdigit(static_cast<unsigned char>(digits[0])))
      if (auto n = parse_u64(digits))
        // kstrtoll: a negative value must fit in an s64.
        if (!negative || *n <= uint64_t{1} << 63) {
          lit.number = negative ? ~*n + 1 : *n;
          lit.parsed = true;
        }
    return lit;
  }

  std::string_view text_;
  uint32_t base_;
  std::string_view command_;
  size_t pos_ = 0;
  int depth_ = 0;
  size_t terms_ = 0;
  std::vector<FilterNode> nodes_;
};

}  // namespace

Result<Filter, Diagnostic> parse_filter(std::string_view text, uint32_t base, std::string_view command) {
  return FilterParser(text, base, command).parse();
}

}  // namespace histd::parse
