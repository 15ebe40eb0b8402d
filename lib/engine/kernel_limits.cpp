// What the kernel imposes on the programs histd loads for an event: the
// maps one program may use, and the events its BPF recursion guard keeps
// from them.
#include <fmt/format.h>

#include "engine/engine_state.h"
#include "histd/engine.h"

namespace histd::engine {

const size_t kMaxMapsPerProgram = 64;

uint64_t Engine::event_missed(const EventState& ev) const {
  return (ev.attachment ? ev.attachment->missed() : 0) + (ev.program ? ev.program->missed() : 0);
}

uint64_t Engine::trigger_missed(const EventState& ev, const Trigger& t) const {
  const uint64_t now = event_missed(ev);
  return now >= t.missed_base ? now - t.missed_base : now;
}

std::vector<EventMissed> Engine::missed() {
  std::lock_guard lock(mu_);
  std::vector<EventMissed> out;
  for (const auto& [id, ev] : events_)
    if (ev->attachment) out.push_back(EventMissed{id.system, id.name, event_missed(*ev)});
  return out;
}

CommandResult Engine::rebuild_failure(EventState& ev, const std::string& command, Error e) {
  // rebuild() says ENOSPC only for the maps of one program (see there).
  if (e.kind == ErrorKind::Busy && e.err == ENOSPC)
    return user_error(ev, Diagnostic{ErrorCode::ProgramMapLimit, Span{0, 0}, command, std::move(e.context)}, ENOSPC);
  return system_failure(std::move(e));
}

}  // namespace histd::engine
