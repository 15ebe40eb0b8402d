// What the kernel imposes on the programs histd loads for an event: the
// maps one program may use.
#include <fmt/format.h>

#include "engine/engine_state.h"
#include "histd/engine.h"

namespace histd::engine {

const size_t kMaxMapsPerProgram = 64;

CommandResult Engine::rebuild_failure(EventState& ev, const std::string& command, Error e) {
  // rebuild() says ENOSPC only for the maps of one program (see there).
  if (e.kind == ErrorKind::Busy && e.err == ENOSPC)
    return user_error(ev, Diagnostic{ErrorCode::ProgramMapLimit, Span{0, 0}, command, std::move(e.context)}, ENOSPC);
  return system_failure(std::move(e));
}

}  // namespace histd::engine
