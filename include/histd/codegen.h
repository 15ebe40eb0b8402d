// Stage 4, codegen: the plans of one event -> one BPF C unit. Pure.
//
// The unit has two entry points running the same inlined handler: the
// tracepoint program the dispatcher tail-calls, and a raw_tp test entry that
// copies an injected record from user memory (ARCHITECTURE decision 8).
// Generated code never contains user text: identifiers are synthesized
// (tbl0, st0, trigger_0), numbers are re-printed from parsed integers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "histd/plan.h"

namespace histd::codegen {

struct TriggerInput {
  const plan::HistPlan* plan = nullptr;
  uint32_t control_slot = 0;  // index into the engine's control array
};

// Names of the objects in the generated unit, for the loader.
inline constexpr const char* kEventProgram = "event_prog";
inline constexpr const char* kTestProgram = "test_entry";
inline constexpr const char* kControlMap = "histd_ctl";
std::string table_map_name(size_t trigger_index);  // "tbl<i>"
std::string stats_map_name(size_t trigger_index);  // "st<i>"

// An enable_hist/disable_hist trigger: when it fires (filter, count), it
// sets the paused flag of every hist trigger of its target.
struct EnableInput {
  const plan::TypedFilter* filter = nullptr;  // none: always
  uint32_t control_slot = 0;                  // holds its remaining count
  bool enable = true;
  std::vector<uint32_t> target_slots;
};

// All triggers of one event, in order; one table map and one stats map per
// hist trigger.
std::string generate_event_unit(const std::vector<TriggerInput>& triggers,
                                const std::vector<EnableInput>& enables = {});

}  // namespace histd::codegen
