// SPDX-License-Identifier: GPL-2.0-only
#include "control/connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "control/protocol.h"

namespace histd::control {

std::string describe(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{} s", d.count() / 1000) : fmt::format("{} ms", d.count());
}

bool Connection::wait(short events, Clock::time_point deadline, bool& stopped) const {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{fd_, events, 0}, {stop_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) return false;
    if (fds[1].revents) {
      stopped = true;
      return false;
    }
    // A hang-up or error is "ready" too: the next recv() or send() says it.
    if (n > 0 && fds[0].revents) return true;
  }
}

// Appends `size` bytes to `out`. The buffer grows with what arrives, not
// with what the header announces: 16 clients announcing 16 MB each and
// sending nothing cost nothing.
Status Connection::read_exact(std::string& out, size_t size, Clock::time_point deadline,
                              std::chrono::milliseconds within) {
  const size_t target = out.size() + size;
  while (out.size() < target) {
    const size_t had = out.size();
    out.resize(had + std::min<size_t>(target - had, 64 << 10));
    const ssize_t n = recv(fd_, out.data() + had, out.size() - had, MSG_DONTWAIT);
    out.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n > 0) continue;
    if (n == 0) return fail(ErrorKind::System, EPIPE, "control socket closed early");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return fail_errno("reading from the control socket");
    bool stopped = false;
    if (!wait(POLLIN, deadline, stopped)) {
      if (stopped) return fail(ErrorKind::System, ECANCELED, "histd is stopping");
      return fail(ErrorKind::Busy, EAGAIN, "no complete request within " + describe(within));
    }
  }
  return ok_status();
}

Expected<nlohmann::json> Connection::receive(std::chrono::milliseconds within) {
  const Clock::time_point deadline = Clock::now() + within;
  std::string header;
  HISTD_TRY(read_exact(header, kFrameHeader, deadline, within));
  unsigned char bytes[kFrameHeader];
  std::copy(header.begin(), header.end(), bytes);
  const uint32_t len = HISTD_TRY(frame_length(bytes));
  std::string body;
  HISTD_TRY(read_exact(body, len, deadline, within));
  return decode_body(body);
}

Status Connection::send(const nlohmann::json& message, std::chrono::milliseconds within,
                        const std::optional<std::string>& raw, int pass_fd) {
  const Clock::time_point deadline = Clock::now() + within;
  const std::string frame = encode_frame(message);
  const std::string raw_header = raw ? frame_header(raw->size()) : std::string();
  const size_t total = frame.size() + raw_header.size() + (raw ? raw->size() : 0);
  if (raw) room_for(total);
  size_t sent = 0;
  HISTD_TRY(send_bytes(frame, sent, total, deadline, within, pass_fd));
  if (!raw) return ok_status();
  HISTD_TRY(send_bytes(raw_header, sent, total, deadline, within));
  return send_bytes(*raw, sent, total, deadline, within);
}

// A socket's default send buffer is ~200 KB: a scrape's megabytes went in
// as many rounds, histd waking the exporter and waiting for it each time.
// A raw reply gets a few times that (histd is root: past wmem_max), which
// takes the rounds down to a few; not the whole reply, which the kernel
// would keep for a client that never reads it after histd gave up on it.
void Connection::room_for(size_t bytes) const {
  constexpr size_t kMaxSendBuffer = 512 << 10;  // the kernel doubles it
  int size = static_cast<int>(std::min(bytes, kMaxSendBuffer));
  int now = 0;
  socklen_t len = sizeof(now);
  if (getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &now, &len) == 0 && now >= 2 * size) return;
  if (setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) != 0)
    setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));  // not root: up to wmem_max
}

// One sendmsg of `bytes` with `pass_fd` (SCM_RIGHTS), as ::send() returns.
ssize_t Connection::send_with_fd(std::string_view bytes, int pass_fd) const {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  return sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

// Sends `bytes` whole; `sent` counts across the pieces of one reply of
// `total` bytes, for the error's text.
Status Connection::send_bytes(std::string_view bytes, size_t& sent, size_t total, Clock::time_point deadline,
                              std::chrono::milliseconds within, int pass_fd) {
  size_t done = 0;
  while (done < bytes.size()) {
    // MSG_NOSIGNAL: a peer that went away is EPIPE here, not a SIGPIPE
    // that kills the process. `pass_fd` goes with the first byte sent.
    const ssize_t n = done == 0 && pass_fd >= 0
                          ? send_with_fd(bytes, pass_fd)
                          : ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return fail_errno("writing to the control socket");
    bool stopped = false;
    if (!wait(POLLOUT, deadline, stopped)) {
      if (stopped) return fail(ErrorKind::System, ECANCELED, "histd is stopping");
      return fail(ErrorKind::Busy, ETIMEDOUT,
                  fmt::format("the client read {} of {} bytes of its reply within {}", sent, total, describe(within)));
    }
  }
  return ok_status();
}

}  // namespace histd::control
