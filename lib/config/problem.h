// SPDX-License-Identifier: GPL-2.0-only
// Shared by lib/config's .cpp files: a Problem for a declared line.
#pragma once

#include <string_view>

#include "histd/config.h"

namespace histd::config {

// The caret under the fault in `line` as written when the diagnostic's
// command is the text at `column` (the command as the parsers and the
// engine log it), else under the command's start (a command histd printed
// itself, as when a saved entry is applied again).
Problem problem_at(const Origin& origin, std::string_view line, size_t column, Diagnostic d);

}  // namespace histd::config
