// SPDX-License-Identifier: GPL-2.0-only
// What the kernel imposes on the programs histd loads, and what the shared
// maps have room for.
#include "deploy/state.h"

namespace histd::deploy {

const size_t kMaxTriggers = HISTD_MAX_TRIGGERS;
const size_t kMaxSyntheticEvents = HISTD_MAX_SYNTHETIC;
const size_t kMaxMapsPerProgram = 64;

}  // namespace histd::deploy
