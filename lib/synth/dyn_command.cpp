// SPDX-License-Identifier: GPL-2.0-only
// dynamic_events lines for synthetic events, step by step as the kernel's
// create_synth_event() and dyn_event_release() take them.
#include <string>

#include "histd/synth.h"
#include "histd/text.h"

namespace histd::synth {

namespace {

constexpr std::string_view kGroup = "synthetic/";

// "-:[group/]name [args]" or "!x:[group/]name": the name, and whether a
// group other than synthetic was named.
Result<DynCommand, Diagnostic> removal(std::string_view cmd) {
  const std::string_view first = cmd.substr(0, cmd.find_first_of(" \t"));
  size_t at = 0;
  if (first.front() == '-') {
    if (first.size() < 2 || first[1] != ':') return DynCommand{DynCommand::Kind::Other, {}, false};
    at = 2;
  } else {
    at = first.find(':');
    if (at == std::string_view::npos) return DynCommand{DynCommand::Kind::Other, {}, false};
    ++at;
  }
  std::string_view name = first.substr(at);
  bool other_group = false;
  if (const size_t slash = name.find('/'); slash != std::string_view::npos) {
    other_group = name.substr(0, slash + 1) != kGroup;
    name = name.substr(slash + 1);
  } else if (name.empty()) {
    return DynCommand{DynCommand::Kind::Other, {}, false};
  }
  return DynCommand{DynCommand::Kind::Remove, "!" + std::string(name), other_group};
}

}  // namespace

Result<DynCommand, Diagnostic> parse_dyn_command(std::string_view line) {
  const std::string_view cmd = trim(line);
  if (cmd.empty()) return DynCommand{};
  if (cmd.front() == '-' || cmd.front() == '!') return removal(cmd);
  if (!cmd.starts_with("s:")) return DynCommand{DynCommand::Kind::Other, {}, false};
  const std::string logged(cmd);
  const size_t blank = cmd.find_first_of(" \t");
  if (blank == std::string_view::npos)
    return unexpected(Diagnostic{ErrorCode::SynthInvalidCmd, Span{0, 0}, logged, {}});
  std::string_view name = cmd.substr(2, blank - 2);
  if (cmd.substr(2).find('/') != std::string_view::npos) {
    // The kernel looks for a '/' anywhere after "s:", fields included.
    if (!name.starts_with(kGroup)) return unexpected(Diagnostic{ErrorCode::SynthInvalidDynCmd, Span{0, 0}, logged, {}});
    name.remove_prefix(kGroup.size());
  }
  return DynCommand{DynCommand::Kind::Create, std::string(name) + " " + std::string(trim(cmd.substr(blank))), false};
}

}  // namespace histd::synth
