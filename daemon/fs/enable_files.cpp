#include "fs/enable_files.h"

#include <cerrno>

namespace histd::fs {

namespace {

bool is_synthetic(const std::string& system) {
  return catalog::event_source(system) == catalog::EventSource::Synthetic;
}

// "0", "1" or "X" over the synthetic events' states, and whether other
// (never enabled) events count too.
std::string aggregate(engine::Engine& engine, bool with_others) {
  size_t on = 0;
  const auto names = engine.synthetic_names();
  for (const std::string& name : names) on += engine.enabled(std::string(catalog::kSynthSystem), name) ? 1 : 0;
  if (on == 0) return "0\n";
  return on == names.size() && !with_others ? "1\n" : "X\n";
}

}  // namespace

std::string enable_state(engine::Engine& engine, const Node& n) {
  if (n.system.empty()) return aggregate(engine, true);
  if (!is_synthetic(n.system)) return "0\n";
  if (n.event.empty()) return aggregate(engine, false);
  return engine.enabled(n.system, n.event) ? "1\n" : "0\n";
}

int write_enable(engine::Engine& engine, const Node& n, bool on) {
  const bool all = n.system.empty();
  if (!all && !is_synthetic(n.system)) return on ? -EOPNOTSUPP : 0;
  if (all && on) return -EOPNOTSUPP;  // the kernel's events too: not recorded yet
  if (!n.event.empty()) {
    auto r = engine.set_enabled(n.system, n.event, on);
    return r ? 0 : -r.error().error.err;
  }
  for (const std::string& name : engine.synthetic_names()) {
    auto r = engine.set_enabled(std::string(catalog::kSynthSystem), name, on);
    if (!r) return -r.error().error.err;
  }
  return 0;
}

}  // namespace histd::fs
