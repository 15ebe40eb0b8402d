// What the kernel imposes on the programs histd loads for an event: the
// maps one program may use, and the events its BPF recursion guard keeps
// from them.
#include <fmt/format.h>

#include "engine/deployer.h"
#include "histd/engine.h"

namespace histd::engine {

const size_t kMaxMapsPerProgram = 64;

std::vector<EventMissed> Engine::missed() {
  std::lock_guard lock(mu_);
  std::vector<EventMissed> out;
  for (const auto& [id, ev] : deployer_->events())
    if (ev->attachment) out.push_back(EventMissed{id.system, id.name, deployer_->event_missed(*ev)});
  return out;
}

}  // namespace histd::engine
