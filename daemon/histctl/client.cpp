// SPDX-License-Identifier: GPL-2.0-only
#include "histctl/client.h"

#include <fmt/format.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "control/protocol.h"
#include "histd/fd.h"

namespace histd::histctl {

namespace {

using nlohmann::json;

// The message for a caller the socket's mode keeps out: its group, if it
// has one, is the --group histd was given.
std::string denied_message(const std::string& socket_path) {
  struct stat st {};
  if (stat(socket_path.c_str(), &st) == 0 && st.st_gid != 0 && (st.st_mode & S_IRWXG)) {
    const struct group* g = getgrgid(st.st_gid);
    return "histd's control socket needs root or membership of group " +
           (g ? std::string(g->gr_name) : std::to_string(st.st_gid));
  }
  return "histd's control socket needs root";
}

}  // namespace

std::string caret_block(const std::string& command, size_t caret) {
  return fmt::format("  {}\n  {}^\n", command, std::string(caret, ' '));
}

std::optional<json> request(const std::string& socket_path, const json& req, int& rc) {
  histd::Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof(addr.sun_path) - 1);
  rc = kUnreachable;
  if (!fd || connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno == EACCES || errno == EPERM) {
      fmt::print(stderr, "histctl: {} ({}: {})\n", denied_message(socket_path), socket_path, std::strerror(errno));
      rc = kDenied;
      return std::nullopt;
    }
    fmt::print(stderr, "histctl: cannot connect to histd at {}: {}\n", socket_path, std::strerror(errno));
    return std::nullopt;
  }
  // A request histd would not take (it has answered and closed) fails to
  // send; its answer may still be there to read.
  auto st = histd::control::write_frame(fd.get(), req);
  auto reply = histd::control::read_frame(fd.get());
  if (!reply) {
    fmt::print(stderr, "histctl: {}\n", st ? reply.error().context : st.error().context);
    return std::nullopt;
  }
  if (reply->value("denied", false)) {
    fmt::print(stderr, "histctl: {}\n", reply->value("error", "permission denied"));
    rc = kDenied;
    return std::nullopt;
  }
  return *reply;
}

std::optional<json> show_json(const std::string& socket_path, const std::string& event, int& rc) {
  auto reply = request(socket_path, {{"op", "show"}, {"event", event}, {"json", true}}, rc);
  if (!reply) return std::nullopt;
  if (!reply->value("ok", false)) {
    fmt::print(stderr, "error: {}\n", reply->value("error", "unknown error"));
    rc = kRefused;
    return std::nullopt;
  }
  auto doc = json::parse(reply->value("output", "{}"), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("tables") || !doc["tables"].is_array()) {
    fmt::print(stderr, "histctl: histd's tables of {} are not the JSON document expected\n", event);
    rc = kUnreachable;
    return std::nullopt;
  }
  return doc;
}

}  // namespace histd::histctl
