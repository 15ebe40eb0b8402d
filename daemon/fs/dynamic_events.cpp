#include "fs/dynamic_events.h"

#include <cerrno>

#include "histd/synth.h"

namespace histd::fs {

std::string dynamic_events_text(engine::Engine& engine) {
  std::string out;
  for (const synth::SynthDefinition& def : engine.synthetic_events()) out += "s:synthetic/" + synth::list_line(def) + "\n";
  return out;
}

namespace {

int apply_line(engine::Engine& engine, std::string_view line) {
  // As trace_parse_run_command(): '#' starts a comment.
  line = line.substr(0, line.find('#'));
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
      if (cmd->other_group) return -ENOENT;  // no dynamic event of histd's is in another group
      break;
    case synth::DynCommand::Kind::Create:
      break;
  }
  auto r = engine.write_synthetic(cmd->line);
  return r ? 0 : -r.error().error.err;
}

}  // namespace

int write_dynamic_events(engine::Engine& engine, std::string_view data) {
  while (!data.empty()) {
    const size_t end = data.find('\n');
    const std::string_view line = data.substr(0, end);
    if (const int rc = apply_line(engine, line); rc < 0) return rc;
    if (end == std::string_view::npos) break;
    data.remove_prefix(end + 1);
  }
  return 0;
}

}  // namespace histd::fs
