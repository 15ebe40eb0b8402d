// SPDX-License-Identifier: GPL-2.0-only
#include "fs/dynamic_events.h"

#include <cerrno>

#include "histd/synth.h"
#include "histd/text.h"

namespace histd::fs {

namespace {

// "p:...", "p ...", "r:...", "r16:...": a kprobe or uprobe definition;
// "e:...", "e ...": an eprobe (histd's own).
bool is_probe_line(std::string_view cmd) {
  if (cmd.size() < 2 || (cmd[0] != 'p' && cmd[0] != 'r' && cmd[0] != 'e')) return false;
  size_t i = 1;
  while (cmd[0] == 'r' && i < cmd.size() && cmd[i] >= '0' && cmd[i] <= '9') ++i;
  return i < cmd.size() && (cmd[i] == ':' || is_space(cmd[i]));
}

// The kernel's probe lines of its dynamic_events listing.
std::vector<std::string_view> probe_lines(std::string_view listing) {
  std::vector<std::string_view> out;
  while (!listing.empty()) {
    const size_t nl = listing.find('\n');
    const std::string_view line = listing.substr(0, nl);
    if (is_probe_line(line)) out.push_back(line);
    if (nl == std::string_view::npos) break;
    listing.remove_prefix(nl + 1);
  }
  return out;
}

// "-:[GRP/]EVENT" for the probe a listed line defines.
std::string removal_of(std::string_view line) {
  const size_t colon = line.find(':'), space = line.find(' ');
  return "-:" + std::string(line.substr(colon + 1, space - colon - 1));
}

int to_kernel(engine::Engine& engine, std::string_view line, bool root) {
  // Probes read any memory of the traced code: the kernel's are root's, and
  // histd's eprobes as well. Refused with a line in error_log, as a write's
  // other refusals are.
  if (!root) {
    const std::string command(trim(line));
    engine.log_config_error(
        "dynamic_events",
        Diagnostic{ErrorCode::ProbeNotRoot, Span{0, static_cast<uint32_t>(command.size())}, command, {}});
    return -EACCES;
  }
  auto r = engine.write_probe_events("dynamic_events", line, false);
  return r ? 0 : -r.error().error.err;
}

bool is_synthetic(engine::Engine& engine, std::string_view removal) {
  const std::string_view name = removal.substr(1);  // after the '!'
  for (const std::string& s : engine.reads().synthetic_names())
    if (s == name) return true;
  return false;
}

int apply_line(engine::Engine& engine, std::string_view line, bool root) {
  // As trace_parse_run_command(): '#' starts a comment.
  line = line.substr(0, line.find('#'));
  if (is_probe_line(trim(line))) return to_kernel(engine, trim(line), root);
  auto cmd = synth::parse_dyn_command(line);
  if (!cmd) {
    engine.log_config_error("synthetic_events", cmd.error());
    return -EINVAL;
  }
  switch (cmd->kind) {
    case synth::DynCommand::Kind::Empty:
      return 0;
    case synth::DynCommand::Kind::Other:
      return -EINVAL;
    case synth::DynCommand::Kind::Remove:
      // Not one of histd's synthetic events: the kernel's probe events may
      // have it (the kernel says ENOENT if not).
      if (cmd->other_group || (!is_synthetic(engine, cmd->line) && root)) return to_kernel(engine, trim(line), root);
      break;
    case synth::DynCommand::Kind::Create:
      break;
  }
  auto r = engine.write_synthetic(cmd->line);
  return r ? 0 : -r.error().error.err;
}

}  // namespace

std::string dynamic_events_text(engine::Engine& engine) {
  std::string out;
  for (const synth::SynthDefinition& def : engine.reads().synthetic_events())
    out += "s:synthetic/" + synth::list_line(def) + "\n";
  const std::string kernel = engine.reads().probe_events("dynamic_events");
  for (std::string_view line : probe_lines(kernel)) out += std::string(line) + "\n";
  return out;
}

int write_dynamic_events(engine::Engine& engine, std::string_view data, bool root) {
  while (!data.empty()) {
    const size_t end = data.find('\n');
    const std::string_view line = data.substr(0, end);
    if (const int rc = apply_line(engine, line, root); rc < 0) return rc;
    if (end == std::string_view::npos) break;
    data.remove_prefix(end + 1);
  }
  return 0;
}

int truncate_dynamic_events(engine::Engine& engine, bool root) {
  if (root) {
    // The probes histd lists, one by one (the kernel's O_TRUNC would take
    // its other dynamic events too), first: an eprobe holds the synthetic
    // event it is attached to.
    const std::string kernel = engine.reads().probe_events("dynamic_events");
    for (std::string_view line : probe_lines(kernel))
      if (const int rc = to_kernel(engine, removal_of(line), root); rc < 0) return rc;
  }
  auto r = engine.truncate_synthetic();
  return r ? 0 : -r.error().error.err;
}

}  // namespace histd::fs
