// kprobe_events and uprobe_events through histd's tree: the kernel's file, written under the
// engine's lock so that no program is built from a format that changes
// under it.
#include "histd/engine.h"

namespace histd::engine {

std::string Engine::probe_events(const std::string& file) {
  std::lock_guard lock(mu_);
  return deployer_->probe_events(file);
}

CommandResult Engine::write_probe_events(const std::string& file, std::string_view text, bool truncate) {
  std::lock_guard lock(mu_);
  auto st = deployer_->write_probe_events(file, text, truncate);
  if (st) return Unit{};
  const std::string_view command = truncate && text.empty() ? std::string_view("(truncate)") : text;
  return finish_command(file, command, nullptr, system_failure(std::move(st).error()));
}

}  // namespace histd::engine
