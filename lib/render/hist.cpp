// SPDX-License-Identifier: GPL-2.0-only
// The hist and hist.json files from an event's tables as the engine read
// them (readout::EventHist), and hist_debug.
#include <fmt/format.h>

#include "histd/render.h"

namespace histd::render {

namespace {

std::string state_suffix(bool paused) { return paused ? " [paused]" : " [active]"; }

std::vector<Section> sections_of(const readout::EventHist& hist, const Resolver& resolver, const Options& options) {
  std::vector<Section> sections;
  sections.reserve(hist.tables.size());
  for (const readout::HistTable& t : hist.tables) {
    Section section{t.plan.trigger_text() + state_suffix(t.paused), &t.table, {}, t.memory, t.missed};
    if (t.tracked) section.tracking = &t.plan;
    if (t.snapshot) section.after_entries = snapshot_block(t, resolver, options);
    sections.push_back(std::move(section));
  }
  return sections;
}

// Which of the event's programs holds a trigger (docs/design/bpf.md, "Program chains").
std::string program_of(const readout::EventDebug& d, const readout::DebugTable& t) {
  if (t.chain_slot > 0)
    return fmt::format("program {} of the {} in the event's chain: {} trigger{}", t.chain_slot, d.chained_programs,
                       t.program_triggers, t.program_triggers == 1 ? "" : "s");
  if (d.chained_programs == 0) return "all triggers of the event";
  return fmt::format("the event program: its {} trigger{} that {} not plain", t.program_triggers,
                     t.program_triggers == 1 ? "" : "s", t.program_triggers == 1 ? "is" : "are");
}

}  // namespace

std::string snapshot_block(const readout::HistTable& t, const Resolver& resolver, const Options& options) {
  if (!t.snapshot) return {};
  const plan::HistPlan& plan = t.plan;
  std::string out;
  for (const plan::ActionPlan& a : plan.actions) {
    if (a.kind != parse::Action::Kind::Snapshot) continue;
    std::vector<uint8_t> key(t.snapshot->key.begin(), t.snapshot->key.end());
    key.resize(plan.key_size);
    const table::Row key_row{key, {}, {}, {}};
    // The tracked variable's value, hidden as its type says.
    const table::AddressKind kind = a.track_var >= 0 && size_t(a.track_var) < plan.vars.size()
                                        ? plan::address_kind(plan.vars[size_t(a.track_var)].expr)
                                        : table::AddressKind::None;
    out = fmt::format(
        "\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value {{ {}({}) }}: {:10}"
        "\ttriggered by event with key: {}\n",
        a.handler == parse::Action::Handler::OnMax ? "onmax" : "onchange", a.track_text,
        shown(t.snapshot->value, kind, options), render_key(t.table, key_row, resolver, options));
  }
  return out;
}

std::string hist_text(const readout::EventHist& hist, const Resolver& resolver, const Options& options) {
  std::string out = render_event(sections_of(hist, resolver, options), resolver, options);
  if (hist.last_error)
    out += fmt::format("\nERROR: {}\n  Last command: {}\n\n", hist.last_error->message(),
                       hist.last_error->printable_command());
  return out;
}

std::string hist_json(const readout::EventHist& hist, const Resolver& resolver, const Options& options) {
  return render_json(hist.system + ":" + hist.event, sections_of(hist, resolver, options), resolver, options);
}

std::string hist_debug(const readout::EventDebug& d) {
  std::string out;
  for (size_t n = 0; n < d.tables.size(); ++n) {
    const readout::DebugTable& t = d.tables[n];
    if (n > 0) out += "\n\n";
    out +=
        fmt::format("# event histogram\n#\n# trigger info: {}{}\n#\n\n", t.plan.trigger_text(), state_suffix(t.paused));
    // The kernel prints the hist_data pointer; the table map's id names
    // the same thing here (shared by named triggers, stable while it lives).
    out += fmt::format("hist_data: {:016x}\n\n", t.table_map_id);
    out += plan::debug_fields(t.plan);
    out += plan::debug_memory(t.plan, t.memory, d.possible_cpus, t.shared_table);
    if (d.raw_syscall_nr)
      out += fmt::format("  attached: raw tracepoint {}, system call {} (the record rebuilt from the registers)\n",
                         d.raw_syscall_exit ? "sys_exit" : "sys_enter", *d.raw_syscall_nr);
    else if (d.attached && d.btf_typed)
      out += fmt::format("  attached: tracepoint {}, BTF-typed (the record built from its arguments)\n", d.tracepoint);
    else if (d.attached)
      out += fmt::format("  attached: tracepoint {}\n", d.tracepoint);
    out += fmt::format("  program maps: {} of the {} one BPF program may use ({})\n", t.program_maps, d.max_maps,
                       program_of(d, t));
    if (d.attached)
      out += fmt::format(
          "  missed: {} events since this trigger began ({} since the event was attached: the "
          "kernel's BPF recursion guard)\n",
          t.missed, d.event_missed);
  }
  return out;
}

}  // namespace histd::render
