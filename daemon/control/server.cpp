#include "control/server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "control/protocol.h"
#include "histd/symbols.h"

namespace histd::control {

namespace {

using nlohmann::json;

json failure(int err, const std::string& message) {
  return json{{"ok", false}, {"errno", err}, {"error", message}};
}

json command_failure(const engine::CommandFailure& f) {
  json j = failure(f.error.err, f.message());
  if (f.diagnostic) {
    j["command"] = f.diagnostic->command;
    j["caret"] = f.diagnostic->span.begin;
  }
  return j;
}

json success(std::string output = {}) { return json{{"ok", true}, {"output", std::move(output)}}; }

// How the peer is shown kernel addresses: as the tree's readers are
// (kptr_restrict, symbols::may_see_kernel_addresses).
render::Options peer_options(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  const bool see = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                   symbols::may_see_kernel_addresses(cred.uid, cred.pid);
  return render::Options{!see};
}

// A request member: absent is "" (or `fallback`), present with another JSON
// type is an error, never an exception (nlohmann's value() throws there).
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
  const engine::Usage u = engine.usage();
  return json{{"triggers", std::move(triggers)},
              {"usage",
               {{"triggers", u.triggers},
                {"max_triggers", u.max_triggers},
                {"map_memory", u.map_memory},
                {"max_map_memory", u.max_map_memory},
                {"trace_buffer_size", u.trace_buffer_size},
                {"possible_cpus", u.possible_cpus}}}};
}

bool mutates(const std::string& op) {
  return op == "add" || op == "remove" || op == "clear_errors" || op == "synth_add" || op == "synth_remove" ||
         op == "clear_trace" || op == "restore";
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

// `histctl status`: what histd holds against its limits, and what it
// could not restore. Text for people, JSON for tools.
json status_reply(engine::Engine& engine, bool as_json) {
  const engine::Usage u = engine.usage();
  const engine::RestoreReport r = engine.restore_report();
  if (as_json) {
    json j{{"triggers", u.triggers},
           {"max_triggers", u.max_triggers},
           {"map_memory", u.map_memory},
           {"max_map_memory", u.max_map_memory},
           {"trace_buffer_size", u.trace_buffer_size},
           {"possible_cpus", u.possible_cpus},
           {"not_restored", not_restored_json(r.not_restored)},
           {"state_file_problem", r.state_file_problem}};
    return success(j.dump(2) + "\n");
  }
  std::string out = fmt::format("triggers: {} of {}\nmap memory: {} of {} bytes\n", u.triggers, u.max_triggers,
                                u.map_memory, u.max_map_memory);
  if (!r.state_file_problem.empty()) out += "state file: " + r.state_file_problem + "\n";
  out += not_restored_text(r.not_restored);
  return success(out);
}

}  // namespace

Expected<std::unique_ptr<Server>> Server::start(engine::Engine& engine, const std::filesystem::path& socket_path,
                                               gid_t group) {
  std::unique_ptr<Server> s(new Server());
  s->engine_ = &engine;
  s->group_ = group;
  s->path_ = socket_path;
  std::error_code ec;
  std::filesystem::create_directories(socket_path.parent_path(), ec);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.string().size() >= sizeof(addr.sun_path))
    return fail(ErrorKind::Invalid, ENAMETOOLONG, "socket path too long: " + socket_path.string());
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  s->listen_ = runtime::Fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s->listen_) return fail_errno("socket");
  unlink(socket_path.c_str());  // a stale socket from a previous run
  if (bind(s->listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    return fail_errno("binding " + socket_path.string());
  // Anyone may connect and read; changes are checked per request.
  chmod(socket_path.c_str(), 0666);
  if (listen(s->listen_.get(), 16) != 0) return fail_errno("listen");
  s->stop_ = runtime::Fd(eventfd(0, EFD_CLOEXEC));
  if (!s->stop_) return fail_errno("eventfd");
  s->thread_ = std::thread([srv = s.get()] { srv->serve(); });
  return s;
}

Server::~Server() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_.get(), &one, sizeof(one));
    thread_.join();
  }
  unlink(path_.c_str());
}

void Server::serve() {
  for (;;) {
    pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    runtime::Fd conn(accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) continue;
    // A stalled client must not hold the socket: bound each read.
    timeval tv{5, 0};
    setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    // Nothing a client sends may end the server: handle() reports bad
    // requests itself; this catches what it cannot (allocation failures).
    try {
      handle(conn.get());
    } catch (const std::exception& e) {
      (void)write_frame(conn.get(), failure(EIO, std::string("internal error: ") + e.what()));
    }
  }
}

// The peer's credentials, as the kernel saw them at connect().
bool Server::may_change(int fd) const {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  if (cred.uid == 0) return true;
  if (group_ == 0) return false;
  if (cred.gid == group_) return true;
  std::vector<gid_t> groups(64);
  socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0) return false;
  groups.resize(glen / sizeof(gid_t));
  return std::find(groups.begin(), groups.end(), group_) != groups.end();
}

void Server::handle(int fd) {
  auto request = read_frame(fd);
  if (!request) {
    // EPIPE: the client is gone (a truncated frame); nobody to answer.
    if (request.error().err != EPIPE) (void)write_frame(fd, failure(request.error().err, request.error().context));
    return;
  }
  const json& req = *request;
  for (const char* key : {"op", "event", "command"}) {
    if (!string_member(req, key)) {
      (void)write_frame(fd, failure(EINVAL, fmt::format("\"{}\" must be a string", key)));
      return;
    }
  }
  const std::string op = *string_member(req, "op");
  const std::string event = *string_member(req, "event");
  const std::string command = *string_member(req, "command");
  if (op.empty()) {
    (void)write_frame(fd, failure(EINVAL, "missing \"op\""));
    return;
  }

  if (mutates(op) && !may_change(fd)) {
    (void)write_frame(fd, failure(EPERM, group_ ? "changing triggers needs root or the histd group"
                                                : "changing triggers needs root"));
    return;
  }

  json reply;
  auto ev = split_event(event);
  const bool needs_event = op == "add" || op == "remove" || op == "show" || op == "source";
  if (needs_event && !ev) {
    reply = failure(EINVAL, "expected SYSTEM:EVENT, got '" + event + "'");
  } else if (op == "add" || op == "remove") {
    // A removal names its trigger as added or as listed. The kernel takes
    // the removal of a trigger that is not there silently; histctl's user
    // asked for one by name and is told it was not found (ENOENT).
    auto r = op == "remove" ? engine_->remove_listed(ev->first, ev->second, command)
                            : engine_->write_trigger(ev->first, ev->second, command);
    if (!r) {
      if (!r.error().diagnostic) fmt::print(stderr, "histd: {}: {}\n", event, r.error().message());
      reply = command_failure(r.error());
    } else {
      reply = success();
    }
  } else if (op == "status") {
    const std::optional<bool> as_json = bool_member(req, "json");
    reply = as_json ? status_reply(*engine_, *as_json) : failure(EINVAL, "\"json\" must be a boolean");
  } else if (op == "restore") {
    const std::vector<engine::NotRestored> left = engine_->retry_restore();
    reply = left.empty() ? success("every saved trigger is restored\n")
                         : failure(EAGAIN, not_restored_text(left));
  } else if (op == "show") {
    const std::optional<bool> as_json = bool_member(req, "json");
    if (!as_json) {
      reply = failure(EINVAL, "\"json\" must be a boolean");
    } else {
      const render::Options shown = peer_options(fd);
      auto h = *as_json ? engine_->read_hist_json(ev->first, ev->second, shown)
                        : engine_->read_hist(ev->first, ev->second, shown);
      reply = h ? success(*h) : failure(h.error().err, h.error().context);
    }
  } else if (op == "source") {
    reply = success(engine_->event_source(ev->first, ev->second));
  } else if (op == "list" && req.value("json", false)) {
    reply = success(list_json(*engine_).dump(2) + "\n");
  } else if (op == "list") {
    std::string out;
    for (const std::string& line : engine_->list_triggers()) out += line + "\n";
    reply = success(out);
  } else if (op == "synth_add" || op == "synth_remove") {
    // The definition as synthetic_events takes it; removal by name.
    std::string text = op == "synth_remove" && command.rfind('!', 0) != 0 ? "!" + command : command;
    auto r = engine_->write_synthetic(text);
    reply = r ? success() : command_failure(r.error());
  } else if (op == "synth_list") {
    reply = success(engine_->read_synthetic());
  } else if (op == "trace") {
    reply = success(engine_->read_trace(peer_options(fd)));
  } else if (op == "clear_trace") {
    engine_->clear_trace();
    reply = success();
  } else if (op == "errors") {
    reply = success(engine_->read_error_log());
  } else if (op == "clear_errors") {
    engine_->clear_error_log();
    reply = success();
  } else {
    reply = failure(EINVAL, "unknown op '" + op + "'");
  }
  (void)write_frame(fd, reply);
}

}  // namespace histd::control
