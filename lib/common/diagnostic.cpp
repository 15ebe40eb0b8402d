// SPDX-License-Identifier: GPL-2.0-only
#include "histd/diagnostic.h"

#include <array>
#include <cstring>

#include "histd/result.h"

namespace histd {

namespace {

constexpr std::array kErrorTexts = {
#define HISTD_ERROR_TEXT_(name, text) std::string_view(text),
    HISTD_ERROR_CODES(HISTD_ERROR_TEXT_)
#undef HISTD_ERROR_TEXT_
};

constexpr std::array kErrorNames = {
#define HISTD_ERROR_NAME_(name, text) std::string_view(#name),
    HISTD_ERROR_CODES(HISTD_ERROR_NAME_)
#undef HISTD_ERROR_NAME_
};

}  // namespace

std::string_view error_text(ErrorCode code) { return kErrorTexts.at(static_cast<size_t>(code)); }

std::string_view error_name(ErrorCode code) { return kErrorNames.at(static_cast<size_t>(code)); }

std::string Diagnostic::message() const {
  std::string text(error_text(code));
  if (!detail.empty()) {
    text += ": ";
    text += detail;
  }
  return text;
}

std::string CommandFailure::message() const { return diagnostic ? diagnostic->message() : error.context; }

std::string Diagnostic::printable_command() const {
  std::string out(command);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\0') c = ' ';
  return out;
}

std::string format_error_log_entry(std::string_view location, const Diagnostic& d) {
  std::string out;
  out += location;
  out += ": error: ";
  out += d.message();
  out += "\n  Command: ";
  out += d.printable_command();
  out += "\n";
  // The caret sits under the first byte of the offending token; "  Command: "
  // is 11 characters wide, as in tracefs.
  out.append(11 + d.span.begin, ' ');
  out += "^\n";
  return out;
}

}  // namespace histd
