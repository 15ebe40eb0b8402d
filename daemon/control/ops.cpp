#include "control/ops.h"

#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "control/protocol.h"
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
              {"trace_buffer_size", u.trace_buffer_size},
              {"possible_cpus", u.possible_cpus}};
}

// `histctl list --json`: every trigger with its map memory, and the totals
// against histd's limits.
json list_json(engine::Engine& engine) {
  json triggers = json::array();
  for (const engine::TriggerInfo& t : engine.trigger_info()) {
    json j{{"event", t.system + ":" + t.event}, {"trigger", t.line}, {"kind", t.hist ? "hist" : "enable"}};
    if (!t.not_restored.empty()) {
      j["not_restored"] = t.not_restored;
    } else if (t.hist) {
      j["map_memory"] = memory_json(t.memory);
      j["map_ids"] = {
          {"table", t.table_map_id}, {"stats", t.stats_map_id}, {"vars", t.vars_map_id}, {"hot", t.hot_map_id}};
      if (!t.shared_table.empty()) j["shared_table"] = t.shared_table;
    }
    triggers.push_back(std::move(j));
  }
  return json{{"triggers", std::move(triggers)}, {"usage", usage_json(engine.usage())}};
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
  std::string event;    // as sent
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
                  : c.engine.write_trigger(c.system_name, c.event_name, c.command);
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
  for (const engine::EventMissed& m : engine.missed()) {
    total += m.missed;
    by_event.push_back({{"event", m.system + ":" + m.event}, {"missed", m.missed}});
  }
  return {total, std::move(by_event)};
}

// `histctl status`: what histd holds against its limits, what it could not
// restore, and what the kernel kept from it. Text for people, JSON for tools.
json op_status(Call& c) {
  const engine::Usage u = c.engine.usage();
  const engine::RestoreReport r = c.engine.restore_report();
  auto [missed, missed_by_event] = missed_events(c.engine);
  if (c.as_json) {
    json j = usage_json(u);
    j["missed_events"] = missed;
    j["missed_by_event"] = missed_by_event;
    j["not_restored"] = not_restored_json(r.not_restored);
    j["state_file_problem"] = r.state_file_problem;
    return success(j.dump(2) + "\n");
  }
  std::string out = fmt::format("triggers: {} of {}\nsynthetic events: {} of {}\nmap memory: {} of {} bytes\n",
                                u.triggers, u.max_triggers, u.synthetic_events, u.max_synthetic_events,
                                u.map_memory, u.max_map_memory);
  out += fmt::format("missed events: {}\n", missed);
  for (const json& m : missed_by_event) {
    const uint64_t n = m["missed"].get<uint64_t>();
    if (n) out += fmt::format("  {} {}\n", m["event"].get<std::string>(), n);
  }
  if (!r.state_file_problem.empty()) out += "state file: " + r.state_file_problem + "\n";
  return success(out + not_restored_text(r.not_restored));
}

json op_restore(Call& c) {
  const std::vector<engine::NotRestored> left = c.engine.retry_restore();
  return left.empty() ? success("every saved trigger is restored\n") : failure(EAGAIN, not_restored_text(left));
}

// How the peer is shown kernel addresses: as the tree's readers are
// (kptr_restrict, symbols::may_see_kernel_addresses).
render::Options shown_to(const Peer& peer) {
  return render::Options{!symbols::may_see_kernel_addresses(peer.uid, peer.pid)};
}

json op_show(Call& c) {
  const render::Options shown = shown_to(c.peer);
  auto h = c.as_json ? c.engine.read_hist_json(c.system_name, c.event_name, shown)
                     : c.engine.read_hist(c.system_name, c.event_name, shown);
  return h ? success(*h) : failure(h.error().err, h.error().context);
}

json op_source(Call& c) { return success(c.engine.event_source(c.system_name, c.event_name)); }

json op_list(Call& c) {
  if (c.as_json) return success(list_json(c.engine).dump(2) + "\n");
  std::string out;
  for (const std::string& line : c.engine.list_triggers()) out += line + "\n";
  return success(out);
}

// The definition as synthetic_events takes it; removal by name.
json change_synthetic(Call& c, bool remove) {
  const std::string text = remove && c.command.rfind('!', 0) != 0 ? "!" + c.command : c.command;
  auto r = c.engine.write_synthetic(text);
  return r ? success() : command_failure(r.error());
}
json op_synth_add(Call& c) { return change_synthetic(c, false); }
json op_synth_remove(Call& c) { return change_synthetic(c, true); }
json op_synth_list(Call& c) { return success(c.engine.read_synthetic()); }
json op_trace(Call& c) { return success(c.engine.read_trace(shown_to(c.peer))); }
json op_clear_trace(Call& c) {
  c.engine.clear_trace();
  return success();
}
json op_errors(Call& c) { return success(c.engine.read_error_log()); }
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
    {"list", false, true, op_list},
    {"status", false, true, op_status},
    {"restore", false, false, op_restore},
    {"synth_add", false, false, op_synth_add},
    {"synth_remove", false, false, op_synth_remove},
    {"synth_list", false, false, op_synth_list},
    {"trace", false, false, op_trace},
    {"clear_trace", false, false, op_clear_trace},
    {"errors", false, false, op_errors},
    {"clear_errors", false, false, op_clear_errors},
};

}  // namespace

json failure(int err, const std::string& message) {
  return json{{"ok", false}, {"errno", err}, {"error", message}};
}

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

json dispatch(engine::Engine& engine, const json& request, const Peer& peer, const Access& access) {
  if (!access.allows(peer)) return access.refusal();
  for (const char* key : {"op", "event", "command"}) {
    if (!string_member(request, key)) return failure(EINVAL, fmt::format("\"{}\" must be a string", key));
  }
  Call call{engine, peer, *string_member(request, "event"), *string_member(request, "command")};
  const std::string op = *string_member(request, "op");
  if (op.empty()) return failure(EINVAL, "missing \"op\"");
  const Op* found = std::find_if(std::begin(kOps), std::end(kOps), [&](const Op& o) { return o.name == op; });
  if (found == std::end(kOps)) return failure(EINVAL, "unknown op '" + op + "'");
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

}  // namespace histd::control
