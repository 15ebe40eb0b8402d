// SPDX-License-Identifier: GPL-2.0-only
#include "control/ops.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "control/protocol.h"
#include "histd/render.h"
#include "histd/symbols.h"

namespace histd::control {

namespace {

using nlohmann::json;

json command_failure(const engine::CommandFailure& f) {
  json j = failure(f.error.err, f.message());
  if (f.diagnostic) {
    j["command"] = f.diagnostic->command;
    j["caret"] = f.diagnostic->span.begin;
  }
  return j;
}

json success(std::string output = {}) { return json{{"ok", true}, {"output", std::move(output)}}; }

// A request member: absent is "" (or false), present with another JSON type
// is an error, never an exception (nlohmann's value() throws there).
std::optional<std::string> string_member(const json& req, const char* key) {
  auto it = req.find(key);
  if (it == req.end()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<bool> bool_member(const json& req, const char* key) {
  auto it = req.find(key);
  if (it == req.end()) return false;
  if (!it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

json memory_json(const plan::MapMemory& m) {
  return json{{"table", m.table}, {"stats", m.stats}, {"vars", m.vars}, {"hot", m.hot}, {"total", m.total()}};
}

json usage_json(const engine::Usage& u) {
  return json{{"triggers", u.triggers},
              {"max_triggers", u.max_triggers},
              {"synthetic_events", u.synthetic_events},
              {"max_synthetic_events", u.max_synthetic_events},
              {"map_memory", u.map_memory},
              {"max_map_memory", u.max_map_memory},
              {"map_memory_all_trees", u.map_memory_all_trees},
              {"trace_buffer_size", u.trace_buffer_size},
              {"possible_cpus", u.possible_cpus}};
}

// `histctl list --json`: every trigger with its map memory, and the totals
// against histd's limits.
json list_json(engine::Engine& engine) {
  json triggers = json::array();
  for (const engine::TriggerInfo& t : engine.reads().trigger_info()) {
    json j{{"event", t.system + ":" + t.event},
           {"trigger", render::trigger_line(t)},
           {"kind", t.hist ? "hist" : "enable"}};
    if (t.config) j["config"] = true;  // declared in the configuration directory
    if (t.state == readout::TriggerState::NotRestored) {
      j["not_restored"] = t.not_restored;
    } else if (t.hist) {
      j["map_memory"] = memory_json(t.memory);
      j["map_ids"] = {
          {"table", t.table_map_id}, {"stats", t.stats_map_id}, {"vars", t.vars_map_id}, {"hot", t.hot_map_id}};
      if (!t.shared_table.empty()) j["shared_table"] = t.shared_table;
    }
    triggers.push_back(std::move(j));
  }
  return json{{"triggers", std::move(triggers)}, {"usage", usage_json(engine.reads().usage())}};
}

json not_restored_json(const std::vector<engine::NotRestored>& list) {
  json out = json::array();
  for (const engine::NotRestored& n : list)
    out.push_back({{"event", n.event}, {"command", n.command}, {"reason", n.reason}});
  return out;
}

std::string not_restored_text(const std::vector<engine::NotRestored>& list) {
  std::string out = fmt::format("not restored: {}\n", list.size());
  for (const engine::NotRestored& n : list) out += fmt::format("  {} {}\n    {}\n", n.event, n.command, n.reason);
  return out;
}

// One request, its members type-checked.
struct Call {
  engine::Engine& engine;
  const Peer& peer;
  const Services& services;
  std::string event;  // as sent
  std::string command;
  std::string system_name, event_name;  // split from `event` for ops that take one
  bool as_json = false;
};

using Handler = json (*)(Call&);

// Add and remove. A removal names its trigger as added or as listed. The
// kernel takes the removal of a trigger that is not there silently;
// histctl's user asked for one by name and is told it was not found
// (ENOENT).
json change_trigger(Call& c, bool remove) {
  auto r = remove ? c.engine.remove_listed(c.system_name, c.event_name, c.command)
                  : c.engine.write_trigger(c.system_name, c.event_name, c.command,
                                           symbols::may_see_kernel_addresses(c.peer.uid, c.peer.pid));
  if (r) return success();
  if (!r.error().diagnostic) fmt::print(stderr, "histd: {}: {}\n", c.event, r.error().message());
  return command_failure(r.error());
}
json op_add(Call& c) { return change_trigger(c, false); }
json op_remove(Call& c) { return change_trigger(c, true); }

// Events the kernel ran none of histd's programs for (its BPF recursion
// guard), which its own hist triggers would have counted: a total and the
// events that had any.
std::pair<uint64_t, json> missed_events(engine::Engine& engine) {
  uint64_t total = 0;
  json by_event = json::array();
  for (const engine::EventMissed& m : engine.reads().missed()) {
    total += m.missed;
    by_event.push_back({{"event", m.system + ":" + m.event}, {"missed", m.missed}});
  }
  return {total, std::move(by_event)};
}

// "3d 4h 5m 6s", leading zero units left out ("42s").
std::string duration_text(std::chrono::seconds d) {
  const int64_t s = d.count();
  const int64_t parts[] = {s / 86400, s / 3600 % 24, s / 60 % 60};
  const char* units[] = {"d", "h", "m"};
  std::string out;
  for (size_t i = 0; i < 3; ++i)
    if (!out.empty() || parts[i] > 0) out += fmt::format("{}{} ", parts[i], units[i]);
  return out + fmt::format("{}s", s % 60);
}

// The resident compiler: running, between servers, given up on, or none.
const char* compiler_state(const runtime::Compiler::Stats& s) {
  if (!s.resident) return "none";
  if (s.given_up) return "given up";
  return s.server_pid ? "running" : "stopped";
}

// Servers started after one failed or died (not the first, nor one started
// again after an idle stop).
uint64_t restarts(const runtime::Compiler::Stats& s) {
  return s.server_starts > 1 + s.idle_stops ? s.server_starts - 1 - s.idle_stops : 0;
}

json compiler_json(const runtime::Compiler::Stats& s) {
  return json{{"state", compiler_state(s)},     {"pid", s.server_pid},         {"starts", s.server_starts},
              {"restarts", restarts(s)},        {"idle_stops", s.idle_stops},  {"failures_in_row", s.failures_in_row},
              {"compiles_served", s.by_server}, {"clang_compiles", s.by_clang}};
}

std::string compiler_text(const runtime::Compiler::Stats& s) {
  std::string state;
  if (!s.resident)
    state = "clang (no resident compiler)";
  else if (s.given_up)
    state = fmt::format("histd-cc given up after {} failures in a row: clang compiles every unit", s.failures_in_row);
  else if (s.server_pid)
    state = fmt::format("histd-cc running (pid {})", s.server_pid);
  else
    state = "histd-cc not running (started again for the next compile)";
  return fmt::format("compiler: {}\n  {} restarts, {} idle stops, {} compiles served by histd-cc, {} by clang\n", state,
                     restarts(s), s.idle_stops, s.by_server, s.by_clang);
}

// What a whole ring (histd falling behind) turned away since histd started.
json ring_lost_json(const engine::RingLost& l) {
  return json{{"trace_records", l.trace_records}, {"snapshot_notices", l.snapshot_notices}};
}

// What each instance could not restore: its state file kept aside, its
// entries that did not restore (a corrupt instance state is as much the
// operator's to know as the top tree's).
json instances_json(const instances::Instances* instances) {
  json out = json::array();
  if (!instances) return out;
  for (const std::string& name : instances->names()) {
    const auto engine = instances->find(name);
    if (!engine) continue;
    const engine::RestoreReport r = engine->restorer().report();
    if (r.state_file_problem.empty() && r.not_restored.empty()) continue;
    out.push_back(json{{"name", name},
                       {"state_file_problem", r.state_file_problem},
                       {"not_restored", not_restored_json(r.not_restored)}});
  }
  return out;
}

std::string instances_text(const json& instances) {
  std::string out;
  for (const json& i : instances) {
    const std::string name = i["name"].get<std::string>();
    if (const std::string p = i["state_file_problem"].get<std::string>(); !p.empty())
      out += fmt::format("instance {}: state file: {}\n", name, p);
    const json& list = i["not_restored"];
    if (!list.empty()) out += fmt::format("instance {}: not restored: {}\n", name, list.size());
    for (const json& n : list)
      out += fmt::format("  {} {}\n    {}\n", n["event"].get<std::string>(), n["command"].get<std::string>(),
                         n["reason"].get<std::string>());
  }
  return out;
}

// The text of `histctl status`, from its JSON.
std::string status_text(const json& j, const engine::RestoreReport& r, const runtime::Compiler::Stats& cc) {
  auto u64 = [&](const char* key) { return j[key].get<uint64_t>(); };
  std::string out = fmt::format("histd {} (pid {}), up {}\n", j["version"].get<std::string>(), j["pid"].get<int>(),
                                duration_text(std::chrono::seconds(j["uptime_seconds"].get<int64_t>())));
  out += fmt::format("triggers: {} of {}\nsynthetic events: {} of {}\nmap memory: {} of {} bytes", u64("triggers"),
                     u64("max_triggers"), u64("synthetic_events"), u64("max_synthetic_events"), u64("map_memory"),
                     u64("max_map_memory"));
  // The limit is the top tree's and its instances' together.
  if (u64("map_memory_all_trees") != u64("map_memory"))
    out += fmt::format(" ({} with the instances)", u64("map_memory_all_trees"));
  out += "\n";
  out += fmt::format("missed events: {}\n", u64("missed_events"));
  for (const json& m : j["missed_by_event"]) {
    const uint64_t n = m["missed"].get<uint64_t>();
    if (n) out += fmt::format("  {} {}\n", m["event"].get<std::string>(), n);
  }
  const json& lost = j["ring_lost"];
  out += fmt::format("lost in the ring buffer: {} trace records, {} snapshot notices\n",
                     lost["trace_records"].get<uint64_t>(), lost["snapshot_notices"].get<uint64_t>());
  out += compiler_text(cc);
  if (!r.state_file_problem.empty()) out += "state file: " + r.state_file_problem + "\n";
  return out + not_restored_text(r.not_restored) + instances_text(j["instances"]);
}

// `histctl status`: which histd, what it holds against its limits, what it
// could not restore, what the kernel kept from it, what it lost, and how it
// compiles. Text for people, JSON for tools.
json op_status(Call& c) {
  const engine::RestoreReport r = c.engine.restorer().report();
  auto [missed, missed_by_event] = missed_events(c.engine);
  json j = usage_json(c.engine.reads().usage());
  j["version"] = HISTD_VERSION;
  j["pid"] = static_cast<int>(getpid());
  j["uptime_seconds"] = std::chrono::duration_cast<std::chrono::seconds>(c.engine.uptime()).count();
  j["missed_events"] = missed;
  j["missed_by_event"] = missed_by_event;
  j["ring_lost"] = ring_lost_json(c.engine.trace_ring().ring_lost());
  const runtime::Compiler::Stats cc = c.engine.compiler().stats();
  j["compiler"] = compiler_json(cc);
  j["not_restored"] = not_restored_json(r.not_restored);
  j["state_file_problem"] = r.state_file_problem;
  j["instances"] = instances_json(c.services.instances);
  return success(c.as_json ? j.dump(2) + "\n" : status_text(j, r, cc));
}

// `histctl reload`: what SIGHUP does, answered with what it did. Refused
// (exit 1) when a line or file was not applied; the summary is printed
// either way.
json op_reload(Call& c) {
  if (!c.services.reload) return failure(EOPNOTSUPP, "this histd reads no configuration directory");
  const config::Report r = c.services.reload();
  std::string out;
  for (const std::string& change : r.changes) out += change + "\n";
  out += r.summary() + "\n";
  if (r.problems.empty()) return success(out);
  std::string errors;
  for (const config::Problem& p : r.problems) errors += p.text();
  json j = failure(EINVAL, errors);
  j["output"] = out;
  return j;
}

json op_restore(Call& c) {
  const std::vector<engine::NotRestored> left = c.engine.restorer().retry();
  return left.empty() ? success("every saved trigger is restored\n") : failure(EAGAIN, not_restored_text(left));
}

// How the peer is shown kernel addresses: as the tree's readers are
// (kptr_restrict, symbols::may_see_kernel_addresses).
render::Options shown_to(const Peer& peer) {
  return render::Options{!symbols::may_see_kernel_addresses(peer.uid, peer.pid)};
}

json op_show(Call& c) {
  auto h = c.engine.reads().hist(c.system_name, c.event_name);
  if (!h) return failure(h.error().err, h.error().context);
  // `histctl show --folded`: the stacks of its stack-keyed tables, folded.
  // Frames are names or "?", never addresses, so every reader gets them alike.
  if (c.command == "folded") return success(render::folded_event(*h, c.engine.resolver()));
  if (!c.command.empty()) return failure(EINVAL, "unknown show form '" + c.command + "' (folded)");
  const render::Options shown = shown_to(c.peer);
  return success(c.as_json ? render::hist_json(*h, c.engine.resolver(), shown)
                           : render::hist_text(*h, c.engine.resolver(), shown));
}

// A program's C ("output") and the plans of its hist triggers ("plans").
json programs(std::string source, std::string plans) {
  json j = success(std::move(source));
  j["plans"] = std::move(plans);
  return j;
}

// `histctl explain SYSTEM:EVENT`: the C of the programs histd runs on the
// event, as it built them from every trigger there ("output"), and the
// triggers' plans ("plans").
json op_source(Call& c) {
  engine::Reads::EventSource s = c.engine.reads().event_source(c.system_name, c.event_name);
  if (!s.source.empty()) return programs(std::move(s.source), std::move(s.plans));
  if (auto h = c.engine.reads().hist(c.system_name, c.event_name); !h) return failure(h.error().err, h.error().context);
  return failure(ENOENT, "histd runs no program on " + c.event + ": it has no trigger and is not enabled");
}

// explain through histd: what the command would compile to with what
// histd has; nothing changes.
json op_preview(Call& c) {
  auto p = c.engine.preview(c.system_name, c.event_name, c.command);
  if (!p) return command_failure(p.error());
  return programs(std::move(p->source), std::move(p->plan));
}

json op_list(Call& c) {
  if (c.as_json) return success(list_json(c.engine).dump(2) + "\n");
  return success(render::trigger_list(c.engine.reads().trigger_lines()));
}

// The definition as synthetic_events takes it; removal by name.
json change_synthetic(Call& c, bool remove) {
  const std::string text = remove && c.command.rfind('!', 0) != 0 ? "!" + c.command : c.command;
  auto r = c.engine.write_synthetic(text);
  return r ? success() : command_failure(r.error());
}
json op_synth_add(Call& c) { return change_synthetic(c, false); }
json op_synth_remove(Call& c) { return change_synthetic(c, true); }
json op_synth_list(Call& c) { return success(render::synthetic_events(c.engine.reads().synthetic_events())); }
json op_trace(Call& c) { return success(c.engine.trace_ring().read_trace(shown_to(c.peer).hide_kernel_addresses)); }
json op_clear_trace(Call& c) {
  c.engine.trace_ring().clear_trace();
  return success();
}
json op_errors(Call& c) { return success(render::error_log(c.engine.reads().error_log())); }

// `histctl metrics`: every table as Prometheus metric families
// (metrics_text), in the text format 0.0.4 or ("command": "openmetrics")
// OpenMetrics 1.0; ("command": "html", "html-log") as histd-exporter's
// page at `/` (render::page, page_options); "folded:ID" a table's folded
// stacks (folded_stacks).
json op_metrics(Call& c) {
  render::MetricsOptions options;
  options.max_series = c.services.metrics_max_series;
  if (auto text = folded_stacks(c.engine, c.command))
    return text->ok() ? success(std::move(**text)) : failure(text->error().err, text->error().context);
  if (const auto page = page_options(c.command))
    return success(
        render::page(hist_events(c.engine), c.engine.resolver(), *page,
                     c.services.page_history ? c.services.page_history() : std::vector<render::TableHistory>{}));
  if (c.command == "openmetrics")
    options.format = render::MetricsFormat::OpenMetrics;
  else if (!c.command.empty() && c.command != "prometheus")
    return failure(EINVAL, "unknown metrics format '" + c.command + "' (prometheus, openmetrics, html or html-log)");
  return success(metrics_text(c.engine, c.services.instances, options));
}
json op_clear_errors(Call& c) {
  c.engine.clear_error_log();
  return success();
}

struct Op {
  std::string_view name;
  bool needs_event;  // "event": "system:event"
  bool takes_json;   // "json": bool
  Handler run;
};

constexpr Op kOps[] = {
    {"add", true, false, op_add},
    {"remove", true, false, op_remove},
    {"show", true, true, op_show},
    {"source", true, false, op_source},
    {"preview", true, false, op_preview},
    {"list", false, true, op_list},
    {"status", false, true, op_status},
    {"restore", false, false, op_restore},
    {"reload", false, false, op_reload},
    {"synth_add", false, false, op_synth_add},
    {"synth_remove", false, false, op_synth_remove},
    {"synth_list", false, false, op_synth_list},
    {"trace", false, false, op_trace},
    {"clear_trace", false, false, op_clear_trace},
    {"errors", false, false, op_errors},
    {"clear_errors", false, false, op_clear_errors},
    {"metrics", false, false, op_metrics},
};

}  // namespace

json failure(int err, const std::string& message) { return json{{"ok", false}, {"errno", err}, {"error", message}}; }

Peer peer_of(int fd) {
  Peer peer;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return peer;
  std::vector<gid_t> groups(64);
  socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  // ERANGE: more groups than room; the kernel says how many bytes it needs.
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0) {
    if (errno != ERANGE) return peer;
    groups.resize(glen / sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0) return peer;
  }
  groups.resize(glen / sizeof(gid_t));
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  peer.gid = cred.gid;
  peer.groups = std::move(groups);
  return peer;
}

bool Access::allows(const Peer& peer) const {
  if (peer.uid == 0) return true;
  if (group == 0) return false;
  return peer.gid == group || std::find(peer.groups.begin(), peer.groups.end(), group) != peer.groups.end();
}

json Access::refusal() const {
  json j = failure(EACCES, group == 0 ? "histd's control socket needs root"
                                      : "histd's control socket needs root or membership of group " + group_name);
  j["denied"] = true;
  return j;
}

json dispatch(engine::Engine& engine, const json& request, const Peer& peer, const Access& access,
              const Services& services) {
  if (!access.allows(peer)) return access.refusal();
  for (const char* key : {"op", "event", "command"}) {
    if (!string_member(request, key)) return failure(EINVAL, fmt::format("\"{}\" must be a string", key));
  }
  if (!bool_member(request, "raw")) return failure(EINVAL, "\"raw\" must be a boolean");
  if (!bool_member(request, "fd")) return failure(EINVAL, "\"fd\" must be a boolean");
  Call call{engine, peer, services, *string_member(request, "event"), *string_member(request, "command")};
  const std::string op = *string_member(request, "op");
  if (op.empty()) return failure(EINVAL, "missing \"op\"");
  const Op* found = std::find_if(std::begin(kOps), std::end(kOps), [&](const Op& o) { return o.name == op; });
  if (found == std::end(kOps)) return failure(EINVAL, "unknown op '" + op + "'");
  if (access.metrics_only && op != "metrics") return failure(EPERM, "histd's metrics socket serves metrics only");
  if (found->needs_event) {
    auto ev = split_event(call.event);
    if (!ev) return failure(EINVAL, "expected SYSTEM:EVENT, got '" + call.event + "'");
    call.system_name = ev->first;
    call.event_name = ev->second;
  }
  if (found->takes_json) {
    const std::optional<bool> as_json = bool_member(request, "json");
    if (!as_json) return failure(EINVAL, "\"json\" must be a boolean");
    call.as_json = *as_json;
  }
  return found->run(call);
}

namespace {

// histd's own state for the metrics (render::DaemonStats).
render::DaemonStats daemon_stats(engine::Engine& engine) {
  render::DaemonStats d;
  d.version = HISTD_VERSION;
  d.start_time_seconds =
      static_cast<double>(engine.started_at().time_since_epoch() / std::chrono::milliseconds(1)) / 1000.0;
  const engine::Usage u = engine.reads().usage();
  d.triggers = u.triggers;
  d.max_triggers = u.max_triggers;
  d.synthetic_events = u.synthetic_events;
  d.max_synthetic_events = u.max_synthetic_events;
  d.map_memory = u.map_memory;
  d.max_map_memory = u.max_map_memory;
  for (const engine::EventMissed& m : engine.reads().missed()) d.missed_events += m.missed;  // the total, no JSON
  const engine::RingLost lost = engine.trace_ring().ring_lost();
  d.ring_lost_trace_records = lost.trace_records;
  d.ring_lost_snapshot_notices = lost.snapshot_notices;
  const runtime::Compiler::Stats cc = engine.compiler().stats();
  d.compiles_by_server = cc.by_server;
  d.compiles_by_clang = cc.by_clang;
  d.compiler_starts = cc.server_starts;
  const engine::ActivationTimes times = engine.reads().activation_times();
  d.activation_bounds.assign(times.kBounds.begin(), times.kBounds.end());
  d.activation_counts.assign(times.counts.begin(), times.counts.end());
  d.activation_sum_seconds = times.sum_seconds;
  return d;
}

}  // namespace

// Every table as Prometheus metric families (render::metrics), then
// histd's own.
std::string metrics_text(engine::Engine& engine, const instances::Instances* instances,
                         const render::MetricsOptions& options) {
  const auto began = std::chrono::steady_clock::now();
  std::vector<render::TreeHist> trees{{"", hist_events(engine)}};
  for (const std::string& name : instances ? instances->names() : std::vector<std::string>{})
    if (std::shared_ptr<engine::Engine> e = instances->find(name)) trees.push_back({name, hist_events(*e)});
  render::DaemonStats daemon = daemon_stats(engine);
  daemon.scrape_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return render::metrics(trees, engine.resolver(), options, &daemon);
}

}  // namespace histd::control
