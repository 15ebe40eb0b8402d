// SPDX-License-Identifier: GPL-2.0-only
// Shared by the control socket tests: frames as raw bytes, a client with
// timeouts, and requests made as another user.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "control/protocol.h"

namespace histd::testing {

inline std::string header(uint32_t len) {
  return std::string{static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                     static_cast<char>((len >> 16) & 0xff), static_cast<char>((len >> 24) & 0xff)};
}
inline std::string frame(const std::string& body) { return header(static_cast<uint32_t>(body.size())) + body; }

inline nlohmann::json request(const std::string& op, const std::string& event = {}, const std::string& command = {}) {
  nlohmann::json j{{"op", op}};
  if (!event.empty()) j["event"] = event;
  if (!command.empty()) j["command"] = command;
  return j;
}
inline std::string req(const std::string& op, const std::string& event = {}, const std::string& command = {}) {
  return frame(request(op, event, command).dump());
}

inline sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  return addr;
}

// One connection, as a client that may stall, trickle or never read.
class Client {
 public:
  explicit Client(const std::filesystem::path& socket) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    const sockaddr_un addr = unix_address(socket.string());
    connected_ = connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
    EXPECT_TRUE(connected_) << socket << ": " << std::strerror(errno);
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // The reply frame, or nullopt when none came whole within `timeout` (the
  // server closed first, or took longer).
  std::optional<nlohmann::json> reply(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string got;
    for (;;) {
      if (got.size() >= 4) {
        const auto* h = reinterpret_cast<const unsigned char*>(got.data());
        const size_t len = h[0] | (h[1] << 8) | (h[2] << 16) | (size_t{h[3]} << 24);
        if (got.size() >= 4 + len) return nlohmann::json::parse(got.substr(4, len), nullptr, false);
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) != 1) return std::nullopt;
      char buf[65536];
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return std::nullopt;
      got.append(buf, static_cast<size_t>(n));
    }
  }
  // Whether the server closed its end within `timeout`, this client having
  // read nothing.
  bool closed_within(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLRDHUP, 0};
    return poll(&p, 1, static_cast<int>(timeout.count())) == 1 && (p.revents & (POLLRDHUP | POLLHUP));
  }
  // Every byte the server sent (after it closed).
  std::string drain() {
    std::string got;
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT)) > 0) got.append(buf, static_cast<size_t>(n));
    return got;
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }

 private:
  int fd_;
  bool connected_ = false;
};

// A request made by a child process as another user.
struct Identity {
  uid_t uid = 65534;
  gid_t gid = 65534;
  std::vector<gid_t> groups;  // supplementary
};
struct UserReply {
  int connect_errno = 0;  // connect() refused (EACCES: the socket's mode)
  nlohmann::json body;    // the reply, when connected
};

inline UserReply as_user(const Identity& who, const std::filesystem::path& socket, const std::string& bytes) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  const sockaddr_un addr = unix_address(socket.string());
  pid_t child = fork();
  if (child == 0) {
    // Only raw system calls here: the parent has threads.
    close(out[0]);
    if (syscall(SYS_setgroups, who.groups.size(), who.groups.data()) != 0 ||
        syscall(SYS_setresgid, who.gid, who.gid, who.gid) != 0 ||
        syscall(SYS_setresuid, who.uid, who.uid, who.uid) != 0)
      _exit(2);
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) _exit(100 + errno);
    if (write(fd, bytes.data(), bytes.size()) != ssize_t(bytes.size())) _exit(4);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
      if (write(out[1], buf, size_t(n)) != n) _exit(5);
    _exit(0);
  }
  close(out[1]);
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) got.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  UserReply r;
  EXPECT_TRUE(WIFEXITED(status)) << status;
  if (WEXITSTATUS(status) >= 100) {
    r.connect_errno = WEXITSTATUS(status) - 100;
    return r;
  }
  EXPECT_EQ(WEXITSTATUS(status), 0);
  if (got.size() >= 4) r.body = nlohmann::json::parse(got.substr(4), nullptr, false);
  return r;
}

}  // namespace histd::testing
