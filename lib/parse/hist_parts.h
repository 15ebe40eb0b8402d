// SPDX-License-Identifier: GPL-2.0-only
// The parts of a hist command that have parsers of their own: fields with
// modifiers, expressions, actions. Shared by lib/parse's .cpp files only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "histd/parse.h"
#include "histd/text.h"

namespace histd::parse {

Unexpected<Diagnostic> parse_error(const HistCommand& cmd, ErrorCode code, Span span, std::string detail = {});

// "name[.modifier]": a plain field.
Result<FieldRef, Diagnostic> parse_field_ref(const HistCommand& cmd, const Piece& item);

// An expression; appends it to cmd.exprs and returns its index.
Result<int, Diagnostic> parse_expression(HistCommand& cmd, const Piece& text);

// True when `text` is more than a plain field: an operator or a '$'.
bool is_expression(std::string_view text);

// One onmatch(...)/onmax(...)/onchange(...) token.
Result<Action, Diagnostic> parse_action(const HistCommand& cmd, const Piece& token);

}  // namespace histd::parse
