// SPDX-License-Identifier: GPL-2.0-only
// A stack-keyed table's stacks, folded as flamegraph.pl and inferno read
// them (render::folded_stacks), which histd-exporter serves at /folded and
// `histctl show --folded` prints; the page's flame graphs draw the same.
#include <fmt/format.h>

#include <algorithm>

#include "render/labels.h"
#include "render/page_parts.h"

namespace histd::render {

std::optional<size_t> stack_key(const table::Table& tab) {
  for (size_t i = 0; i < tab.keys.size(); ++i)
    if (tab.keys[i].display == table::KeyDisplay::Stacktrace) return i;
  return std::nullopt;
}

Stacks stacks_of(const table::Table& tab, const Resolver& res) {
  Stacks stacks;
  const std::optional<size_t> k = stack_key(tab);
  if (!k) return stacks;
  const table::KeyColumn& c = tab.keys[*k];
  for (size_t e = 0; e < tab.entries(); ++e) {
    const table::Row row = tab.row(e);
    const uint64_t hits = row.vals.empty() ? 0 : row.vals[0];
    std::vector<std::string> frames;
    // The key holds the innermost frame first; a folded line starts at the root.
    for_each_shown_frame(
        res, c.size / 8, [&](size_t i) { return row.key_number(c.offset + 8 * static_cast<uint32_t>(i)); },
        [&](uint64_t f) {
          const std::string name = res.symbol_offset(f);
          frames.push_back(name.empty() ? "?" : name);
        });
    if (frames.empty() || hits == 0) continue;
    std::reverse(frames.begin(), frames.end());
    stacks[frames] += hits;
  }
  return stacks;
}

std::string folded_stacks(const table::Table& tab, const Resolver& res) {
  std::string out;
  for (const auto& [frames, hits] : stacks_of(tab, res)) {
    for (size_t i = 0; i < frames.size(); ++i) {
      if (i) out += ';';
      // A ';' or a line break inside a name would split the frame or the line.
      for (char ch : frames[i]) out += ch == ';' ? ':' : ch == '\n' ? ' ' : ch;
    }
    out += fmt::format(" {}\n", hits);
  }
  return out;
}

std::string table_id(const plan::HistPlan& p) {
  return fmt::format("{:08x}", fnv1a32(p.system + ":" + p.event + " " + p.identity()));
}

std::optional<std::string> folded_table(const std::vector<readout::EventHist>& events, std::string_view id,
                                        const Resolver& res) {
  for (const readout::EventHist& e : events)
    for (const readout::HistTable& t : e.tables)
      if (stack_key(t.table) && table_id(t.plan) == id) return folded_stacks(t.table, res);
  return std::nullopt;
}

std::string folded_event(const readout::EventHist& hist, const Resolver& res) {
  size_t stacked = 0;
  for (const readout::HistTable& t : hist.tables) stacked += stack_key(t.table) ? 1 : 0;
  std::string out;
  for (const readout::HistTable& t : hist.tables) {
    if (!stack_key(t.table)) continue;
    // flamegraph.pl and inferno skip a line that does not end in a count.
    if (stacked > 1) out += fmt::format("# {}\n", t.plan.trigger_text());
    out += folded_stacks(t.table, res);
  }
  return out;
}

}  // namespace histd::render
