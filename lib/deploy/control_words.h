// SPDX-License-Identifier: GPL-2.0-only
// A control slot's pause flag in the control array, for the deployer's
// triggers (KernelObjects, through its Kernel) and for the trace ring's
// switches (tracing_on and options/stacktrace are words of the same array,
// which the trace ring reads and writes itself): one encoding for both.
#pragma once

#include <bpf/bpf.h>

#include <cstdint>

#include "hist_shared.h"
#include "histd/result.h"

namespace histd::deploy {

// The pause flag alone, no firings counted (KernelObjects::set_paused too).
inline histd_trigger_control paused_word(bool paused) { return histd_trigger_control{paused ? 1u : 0u, 0}; }

inline Status set_slot_paused(int control, uint32_t slot, bool paused) {
  histd_trigger_control c = paused_word(paused);
  if (bpf_map_update_elem(control, &slot, &c, BPF_ANY) != 0) return fail_errno("updating trigger control");
  return ok_status();
}

inline bool slot_paused(int control, uint32_t slot) {
  histd_trigger_control c{};
  if (bpf_map_lookup_elem(control, &slot, &c) != 0) return false;
  return c.paused != 0;
}

}  // namespace histd::deploy
