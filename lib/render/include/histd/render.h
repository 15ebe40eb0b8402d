// SPDX-License-Identifier: GPL-2.0-only
// Stage 7, render: what the engine's reads return (histd/readout.h) -> the
// text of the tree's files, byte-compatible with the kernel's
// (hist_trigger_show() for `hist`), or JSON. Each front end picks the form
// it serves. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "histd/plan.h"
#include "histd/plan_memory.h"
#include "histd/readout.h"
#include "histd/synth.h"
#include "histd/table.h"

namespace histd::render {

// Resolves what the kernel's printk formats resolve: %ps/%pS symbols,
// syscall names. Implemented by lib/symbols; tests pass fakes.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // "sym" or "sym [module]" for .sym; "" when unknown (the kernel then prints the hex address).
  virtual std::string symbol(uint64_t addr) const = 0;
  // "sym+0xoff/0xsize" (+ " [module]") for .sym-offset and stack frames.
  virtual std::string symbol_offset(uint64_t addr) const = 0;
  // "sys_write", or "" when unknown.
  virtual std::string syscall_name(uint64_t nr) const = 0;
  // True for a frame of a BPF program or of the loop that runs programs on a
  // raw tracepoint. A stack taken on a raw tracepoint (syscall events, see
  // docs/design/bpf.md) begins with such frames; the kernel's stacks begin at the
  // function that fired the event, so leading ones are not shown.
  virtual bool is_tracing_frame(uint64_t addr) const {
    (void)addr;
    return false;
  }
};

// The frames of a stack as the kernel shows them: from the first one that is
// not a tracing frame, up to the first zero.
template <typename Frame>
void for_each_shown_frame(const Resolver& res, size_t count, Frame frame_at, auto&& visit) {
  size_t i = 0;
  while (i < count && frame_at(i) && res.is_tracing_frame(frame_at(i))) ++i;
  for (; i < count; ++i) {
    const uint64_t f = frame_at(i);
    if (!f) break;
    visit(f);
  }
}

// A resolver that knows nothing: symbols print as hex, syscalls as unknown.
const Resolver& null_resolver();

// How one reader is shown a table.
struct Options {
  // For a reader the kernel would not show kernel addresses to
  // (kptr_restrict; symbols::may_see_kernel_addresses): they print as 0, as
  // kallsyms and %pK print them. Symbol names stay, as kallsyms shows them.
  // A key, a saved or tracked value or a stack frame that may be an address
  // (table::AddressKind) is hidden when it lies in the kernel half; a sum of
  // pointers always, a sum of unsigned longs when it lies in the kernel half
  // (a sum of a few kernel addresses does).
  bool hide_kernel_addresses = false;
};

// The kernel half of the address space: bit 63 set. On x86_64 kernel
// addresses start at 0xffff800000000000 (0xff00000000000000 with 5-level
// paging) and user ones end below 0x0100000000000000, with nothing
// canonical between; arm64 splits the same way.
constexpr bool in_kernel_half(uint64_t v) { return (v >> 63) != 0; }

// What a reader is shown of `v`, a number of AddressKind `kind`: a single
// value (a key, a frame, a saved field) or, with `sum`, a column's sum.
constexpr uint64_t shown(uint64_t v, table::AddressKind kind, const Options& o, bool sum = false) {
  if (!o.hide_kernel_addresses || kind == table::AddressKind::None) return v;
  if (sum && kind == table::AddressKind::Pointer) return 0;
  return in_kernel_half(v) ? 0 : v;
}

struct Section {
  std::string trigger_line;  // as in the trigger file, e.g. "hist:keys=...:size=2048 [active]"
  const table::Table* table = nullptr;
  std::string after_entries;  // between the entries and "Totals": the snapshot block
  // The trigger's map memory (plan::map_memory): JSON only, never in the text.
  std::optional<plan::MapMemory> memory;
  // Events of the trigger's event that the kernel's BPF recursion guard kept
  // from histd's programs since the trigger was created or cleared (the
  // kernel's own hist triggers would have counted them): a "    Missed: N"
  // line after the Totals when N > 0, so that the text stays the kernel's
  // otherwise; always in the JSON totals.
  uint64_t missed = 0;
  // The layout of the entries' variable records (table::Row::record), whose
  // tracking text (render_tracking) follows each entry's values; null: none.
  const plan::HistPlan* tracking = nullptr;
};

// One table: "# event histogram\n#\n# trigger info: <line>\n#\n\n<rows>\nTotals:..."
std::string render_table(const Section& section, const Resolver& resolver, const Options& options = {});

// Every table of an event, separated as the kernel separates them ("\n\n").
std::string render_event(const std::vector<Section>& sections, const Resolver& resolver, const Options& options = {});

// An entry's key as the entry line starts: "{ next_pid:       2255 }".
std::string render_key(const table::Table& table, const table::Row& row, const Resolver& resolver,
                       const Options& options = {});

// One entry line (without the trailing newline), exposed for tests.
std::string render_row(const table::Table& table, size_t entry, const Resolver& resolver, const Options& options = {});

// What onmax()/onchange() keep for one entry, from its variable record (all
// zero when the entry has none), as the kernel's track_data_print() shows
// it: "\n\tmax: %10llu" or "\n\tchanged: %10llu", then every saved field
// ("  name: %10llu", strings "  name: %-32s"), except for snapshot().
std::string render_tracking(const plan::HistPlan& plan, std::span<const uint8_t> record, const Options& options = {});

// ---- over the engine's reads (histd/readout.h) ----

// An event's `hist` file: its tables (the trigger lines with " [active]" or
// " [paused]", the snapshot block of a .snapshot() that took one), then the
// last failed command's error.
std::string hist_text(const readout::EventHist& hist, const Resolver& resolver, const Options& options = {});
// The same tables as hist.json (render_json).
std::string hist_json(const readout::EventHist& hist, const Resolver& resolver, const Options& options = {});
// The block an onmax()/onchange() .snapshot() adds below the entries for the
// last snapshot taken ("" when the trigger has none).
std::string snapshot_block(const readout::HistTable& table, const Resolver& resolver, const Options& options = {});
// An event's hist_debug file. It holds no kernel address to hide.
std::string hist_debug(const readout::EventDebug& debug);

// A trigger as its trigger file prints it: the line, then " [active]" or
// " [paused]" for a hist trigger; a trigger that did not restore as it was saved.
std::string trigger_line(const readout::TriggerInfo& trigger);
// An event's trigger file: one trigger_line() a line, or the kernel's
// "# Available triggers:" text when there is none.
std::string trigger_file(const std::vector<readout::TriggerInfo>& triggers);
// `histctl list`: "system:event <trigger_line>" a line; one that did not
// restore with " [not restored: <reason>]".
std::string trigger_list(const std::vector<readout::TriggerInfo>& triggers);
// The error_log file: each entry as tracefs prints one
// ("[    12.345678] hist:sys:event: error: ..." with the command and a caret).
std::string error_log(const std::vector<readout::ErrorLogEntry>& entries);
// The synthetic_events file: one definition a line (synth::list_line).
std::string synthetic_events(const std::vector<synth::SynthDefinition>& defs);

// Tables as metric families for Prometheus (docs/metrics.md): the text
// format 0.0.4 or OpenMetrics 1.0. A table is the family histd_<name> (its
// name=) or histd_<system>_<event>_<hash of its trigger>; its hitcount and
// values are counters, its keys labels in their rendered form (never a raw
// kernel address); a lone .log2 or .buckets key makes a histogram per label
// set of the other keys (cumulative le buckets, _count, and _sum when the
// table sums the same field). At most `max_series` label sets per table;
// the rest are counted in histd_metrics_series_dropped.
enum class MetricsFormat { Prometheus, OpenMetrics };
struct MetricsOptions {
  MetricsFormat format = MetricsFormat::Prometheus;
  size_t max_series = 10000;
};
// histd's own state, written after the tables as histd_* families
// (docs/metrics.md, "histd itself").
struct DaemonStats {
  std::string version;
  double start_time_seconds = 0;  // since the epoch
  uint64_t triggers = 0, max_triggers = 0;
  uint64_t synthetic_events = 0, max_synthetic_events = 0;
  uint64_t map_memory = 0, max_map_memory = 0;  // bytes
  uint64_t missed_events = 0;                   // every event the recursion guard kept from histd
  uint64_t ring_lost_trace_records = 0, ring_lost_snapshot_notices = 0;
  uint64_t compiles_by_server = 0, compiles_by_clang = 0, compiler_starts = 0;
  // How long trigger changes took to take effect: hits per bucket, bucket i
  // up to bounds[i] seconds, the last one (+Inf) past them all.
  std::vector<double> activation_bounds;
  std::vector<uint64_t> activation_counts;
  double activation_sum_seconds = 0;
  double scrape_seconds = 0;  // reading the tables for this scrape
};
// The tables of one tree: the top tree's (instance "") or those of
// instances/NAME, whose series carry the label tracefs_instance="NAME" in
// the same families as the top tree's (a family's first table sets its
// columns: another tree's named table with other columns is not exported,
// its label sets counted as dropped).
struct TreeHist {
  std::string instance;
  std::vector<readout::EventHist> events;
};
std::string metrics(const std::vector<TreeHist>& trees, const Resolver& resolver, const MetricsOptions& options = {},
                    const DaemonStats* daemon = nullptr);

// Every table as one self-contained HTML5 page (docs/metrics.md, "The
// page"), which histd-exporter serves at `/`: per event, per table, the
// trigger line, the totals, and for a table with a histogram key (a lone
// .log2 or .buckets key, as in metrics()) an inline SVG bar chart per label
// set of its other keys, one <rect> per non-empty bucket, most hits first,
// every bucket labelled, on a linear or log y scale; a table without one
// lists the entries at the top end of its sort (the most hit ones by
// default) and counts the rest. A table keyed by a stack has a flame graph
// (an SVG box per frame, root at the bottom, widths its share of the hits)
// and a link to its folded stacks (folded?table=ID); its zoom and search
// are page_script()'s, the one script the page may carry.
// Every text from a user or the traced system is HTML-escaped; kernel
// addresses are hidden as from a reader who may not see them. The page
// loads nothing (no external resource) and reloads itself by
// <meta http-equiv="refresh">; its links are to itself (`?scale=log`) and
// to the folded stacks.
enum class PageScale { Linear, Log };
struct PageOptions {
  unsigned refresh_seconds = 5;
  size_t max_charts = 20;               // per table; the rest are counted, not drawn
  size_t max_bars = 200;                // bucket slots per chart; the rest are counted
  size_t max_rows = 50;                 // entries listed of a table without a chart
  PageScale scale = PageScale::Linear;  // the bar charts' y axis
};
// What a histogram table's merged buckets did over time, for the page's
// latency heatmap: per interval (oldest first, the last one ending now),
// the hits each bucket gained, summed over the table's label sets. histd's
// sampler keeps it (daemon/service/heatmap_sampler.h); the page draws it.
struct TableHistory {
  std::string event;    // "system:event"
  std::string trigger;  // the table's plan::HistPlan::trigger_text(), which names it on its event
  unsigned interval_seconds = 10;
  std::vector<std::map<uint64_t, uint64_t>> intervals;  // bucket (as histogram_totals shows it) -> hits
};
// A table's hits per bucket of its histogram key (a lone .log2 or .buckets
// key), summed over its other keys; buckets of kernel addresses read as
// hidden (bucket 0). None for a table without such a key.
std::optional<std::map<uint64_t, uint64_t>> histogram_totals(const table::Table& table);

std::string page(const std::vector<readout::EventHist>& events, const Resolver& resolver,
                 const PageOptions& options = {}, std::span<const TableHistory> history = {});

// ---- stacks: folded, and the page's flame graphs ----

// The table's first key that is a stack (common_stacktrace, a synthetic
// event's FIELD.stacktrace); none when it has no such key.
std::optional<size_t> stack_key(const table::Table& table);

// A table's stacks in the folded form Brendan Gregg's flamegraph.pl and
// inferno read: a line per distinct stack, frames root first joined by
// ';', a space, then the hits of its entries summed over the other keys
// ("entry_SYSCALL_64+0x76/0x80;do_syscall_64+0x5d/0xe0 12"), lines
// sorted. A frame is its symbol+offset as the hist file names it, "?"
// where the resolver knows none: never an address, whoever reads it. Stacks
// without a frame are left out. "" for a table without a stack key.
std::string folded_stacks(const table::Table& table, const Resolver& resolver);

// A table's id on the page and in /folded?table=ID: 8 hex digits hashed
// from its event and its trigger without its size, so the same trigger
// keeps its id across restarts and a resize.
std::string table_id(const plan::HistPlan& plan);

// The folded stacks of the stack-keyed table whose table_id() is `id`
// among `events`; none when no such table is there.
std::optional<std::string> folded_table(const std::vector<readout::EventHist>& events, std::string_view id,
                                        const Resolver& resolver);

// The folded stacks of every stack-keyed table of an event (`histctl show
// --folded`): one table's lines as folded_stacks() gives them; with
// several, each table's after a "# TRIGGER" line. "" when none has a stack key.
std::string folded_event(const readout::EventHist& hist, const Resolver& resolver);

// The page's one script, which makes its flame graphs interactive (zoom on
// click, search): the text between <script> and </script>, exactly, so
// that the server can allow it alone by its hash (script-src 'sha256-...').
// The page works without it.
std::string_view page_script();

}  // namespace histd::render

namespace histd::render {

// The same tables as JSON, one document per event:
//   {"event": "sys:name", "tables": [{"trigger": "...", "totals": {"hits": N,
//    "entries": N, "dropped": N, "missed": N}, "entries": [{"keys": {...}, "values": {...}}],
//    "map_memory": {"hot": N, "stats": N, "table": N, "total": N, "vars": N}}]}
// (map_memory when the section carries it).
// Keys and values are numbers (strings for string keys, frame lists for
// stacks); where a modifier renders a key, "<name>.<modifier>" holds the
// rendered form beside the raw number.
std::string render_json(const std::string& event, const std::vector<Section>& sections, const Resolver& resolver,
                        const Options& options = {});

}  // namespace histd::render
