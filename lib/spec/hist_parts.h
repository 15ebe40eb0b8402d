// The parts of a hist command that have parsers of their own: fields with
// modifiers, expressions, actions. Shared by lib/spec's .cpp files only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "histd/spec.h"

namespace histd::spec {

// A slice of the logged command and where it starts in it.
struct Piece {
  std::string_view text;
  size_t begin = 0;
  Span span() const { return Span{static_cast<uint32_t>(begin), static_cast<uint32_t>(begin + text.size())}; }
  Piece sub(size_t pos, size_t n = std::string_view::npos) const {
    const std::string_view t = text.substr(pos, n);
    return Piece{t, begin + pos};
  }
};

std::vector<Piece> split(const Piece& p, char sep);
Piece trim(const Piece& p);

Unexpected<Diagnostic> parse_error(const HistCommand& cmd, ErrorCode code, Span span, std::string detail = {});

// "name[.modifier]": a plain field.
Result<FieldRef, Diagnostic> parse_field_ref(const HistCommand& cmd, const Piece& item);

// An expression; appends it to cmd.exprs and returns its index.
Result<int, Diagnostic> parse_expression(HistCommand& cmd, const Piece& text);

// True when `text` is more than a plain field: an operator or a '$'.
bool is_expression(std::string_view text);

// One onmatch(...)/onmax(...)/onchange(...) token.
Result<Action, Diagnostic> parse_action(const HistCommand& cmd, const Piece& token);

}  // namespace histd::spec
