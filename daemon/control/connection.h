// SPDX-License-Identifier: GPL-2.0-only
// One accepted control connection's I/O, bounded in time: the whole request
// frame must arrive before one deadline and the whole reply must leave before
// another, however the client trickles or stalls; and either wait ends at
// once when histd stops. A per-read timeout would not do: a client sending a
// byte every few seconds never trips it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "histd/result.h"

namespace histd::control {

using Clock = std::chrono::steady_clock;

class Connection {
 public:
  // `fd`: a non-blocking connected socket (not owned); `stop_fd` becomes
  // readable when histd stops.
  Connection(int fd, int stop_fd) : fd_(fd), stop_fd_(stop_fd) {}

  // The request frame. Errors: EAGAIN when it is not complete within
  // `within`, EPIPE when the client hung up mid-frame, ECANCELED when histd
  // stops; the frame's own errors (EMSGSIZE, EINVAL) as protocol.h.
  Expected<nlohmann::json> receive(std::chrono::milliseconds within);
  // The reply frame, and `raw`'s frame after it when there is one
  // (protocol.h), whole within `within` (ETIMEDOUT), else as receive().
  // `pass_fd` (protocol.h, "fd"), when not -1, goes with the frame.
  Status send(const nlohmann::json& message, std::chrono::milliseconds within,
              const std::optional<std::string>& raw = std::nullopt, int pass_fd = -1);

 private:
  Status read_exact(std::string& out, size_t size, Clock::time_point deadline, std::chrono::milliseconds within);
  // Waits until the socket is ready for `events`; false when `deadline`
  // passed or histd stops (`stopped` says which).
  bool wait(short events, Clock::time_point deadline, bool& stopped) const;
  ssize_t send_with_fd(std::string_view bytes, int pass_fd) const;
  // A bigger send buffer for a reply of `bytes`.
  void room_for(size_t bytes) const;
  Status send_bytes(std::string_view bytes, size_t& sent, size_t total, Clock::time_point deadline,
                    std::chrono::milliseconds within, int pass_fd = -1);

  int fd_;
  int stop_fd_;
};

// "5 s", or "250 ms" for what is not whole seconds.
std::string describe(std::chrono::milliseconds d);

}  // namespace histd::control
