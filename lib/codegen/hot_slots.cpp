// SPDX-License-Identifier: GPL-2.0-only
// Hot slots in front of a per-CPU hash (plan::HistPlan::hot_slots): the
// code a trigger's handler runs around its hash lookup.
#include <fmt/format.h>

#include <bit>

#include "codegen/emit.h"
#include "histd/plan_memory.h"

namespace histd::codegen::detail {

// Hot slots (plan::HistPlan::hot_slots): the event's key owns its slot on
// this CPU, so its values are added there and the hash is not touched. Runs
// where the hash lookup would; returns from the handler on a hit.
std::string hot_hit(size_t i, const plan::HistPlan& p, const std::vector<std::string>& values) {
  const uint32_t words = p.key_size / 8;
  std::string o = "  __u64 hot_h = 0;\n";
  for (uint32_t w = 0; w < words; ++w)
    o += fmt::format("  hot_h = (hot_h ^ ((const __u64 *)key)[{}]) * 0x{:x}ULL;\n", w, plan::kHotHashMultiplier);
  o += fmt::format("  __u32 hot_idx = (__u32)(hot_h >> {});\n", 64 - std::countr_zero(p.hot_slots));
  o += fmt::format("  struct histd_hot{} *hot = bpf_map_lookup_elem(&{}, &hot_idx);\n", i, hot_map_name(i));
  std::string same;
  for (uint32_t w = 0; w < words; ++w) same += fmt::format(" && hot->key[{}] == ((const __u64 *)key)[{}]", w, w);
  o += fmt::format("  if (hot && hot->score{}) {{\n", same);
  o += fmt::format("    if (hot->score < {}u)\n      hot->score++;\n", plan::kHotMax);
  for (size_t k = 0; k < values.size(); ++k) o += fmt::format("    hot->v[{}] += {};\n", k, values[k]);
  o += "    st->hits++;\n    return;\n  }\n";
  return o;
}

// After the hash took the event: claim a free slot, or take one step of
// the resident's standing and, when it runs out, move its values to its
// entry in the hash and take the slot (the hash already holds this key).
// A resident that never had a hit there has nothing to move: keys that do
// not repeat cost no second lookup.
std::string hot_claim(size_t i, const plan::HistPlan& p) {
  const uint32_t words = p.key_size / 8;
  std::string o = "  if (hot) {\n    if (hot->score && --hot->score == 0 && hot->v[0]) {\n";
  o += fmt::format("      struct histd_val{} *old = bpf_map_lookup_elem(&{}, hot->key);\n      if (old) {{\n", i,
                   table_map_name(i));
  for (size_t k = 0; k < p.vals.size(); ++k) o += fmt::format("        old->v[{}] += hot->v[{}];\n", k, k);
  o += "      }\n    }\n    if (!hot->score) {\n";
  for (uint32_t w = 0; w < words; ++w) o += fmt::format("      hot->key[{}] = ((const __u64 *)key)[{}];\n", w, w);
  for (size_t k = 0; k < p.vals.size(); ++k) o += fmt::format("      hot->v[{}] = 0;\n", k);
  o += fmt::format("      hot->score = {}u;\n    }}\n  }}\n", plan::kHotStart);
  return o;
}

}  // namespace histd::codegen::detail
