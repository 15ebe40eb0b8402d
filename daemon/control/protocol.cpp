// SPDX-License-Identifier: GPL-2.0-only
#include "control/protocol.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "histd/populate.h"

namespace histd::control {

namespace {

Status write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    // MSG_NOSIGNAL: a peer that went away is EPIPE here, not a SIGPIPE
    // that kills the process.
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_errno("writing to the control socket");
    data += n;
    size -= static_cast<size_t>(n);
  }
  return ok_status();
}

Status read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno("reading from the control socket");
    if (n == 0) return fail(ErrorKind::System, EPIPE, "control socket closed early");
    data += n;
    size -= static_cast<size_t>(n);
  }
  return ok_status();
}

}  // namespace

std::string frame_header(size_t size) {
  const auto len = static_cast<uint32_t>(size);
  return {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff), static_cast<char>((len >> 16) & 0xff),
          static_cast<char>((len >> 24) & 0xff)};
}

std::string encode_frame(const nlohmann::json& message) {
  // Output may carry bytes that are not UTF-8 (a task's comm, a command cut
  // at a page): replaced with U+FFFD rather than dump() throwing.
  std::string frame = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  frame.insert(0, frame_header(frame.size()));
  return frame;
}

std::optional<std::string> take_raw_output(const nlohmann::json& request, nlohmann::json& reply) {
  auto asked = request.find("raw");
  if (asked == request.end() || !asked->is_boolean() || !asked->get<bool>()) return std::nullopt;
  auto output = reply.find("output");
  if (!reply.value("ok", false) || output == reply.end() || !output->is_string()) return std::nullopt;
  std::string bytes = std::move(output->get_ref<std::string&>());
  if (bytes.size() > kMaxRawFrame) return std::nullopt;  // sent in the reply, where the frame limit refuses it
  reply.erase(output);
  reply["raw"] = bytes.size();
  return bytes;
}

Expected<std::string> read_output(int fd, nlohmann::json& reply) {
  auto raw = reply.find("raw");
  if (raw == reply.end()) {
    auto output = reply.find("output");
    if (output == reply.end() || !output->is_string()) return std::string();
    return std::move(output->get_ref<std::string&>());
  }
  if (!raw->is_number_unsigned() || raw->get<uint64_t>() > kMaxRawFrame)
    return fail(ErrorKind::Invalid, EMSGSIZE, "raw output too large");
  unsigned char header[kFrameHeader];
  HISTD_TRY(read_all(fd, reinterpret_cast<char*>(header), kFrameHeader));
  const uint32_t len = header[0] | (header[1] << 8) | (header[2] << 16) | (uint32_t{header[3]} << 24);
  if (len != raw->get<uint64_t>())
    return fail(ErrorKind::Invalid, EINVAL, "raw output's frame does not match its reply");
  // Megabytes for a scrape, in pages fresh from the kernel (the exporter's
  // malloc maps each body anew): faulted in at once, not page by page.
  std::string bytes;
  bytes.reserve(len);
  populate_now(bytes.data(), len);
  bytes.resize(len);
  HISTD_TRY(read_all(fd, bytes.data(), len));
  return bytes;
}

bool wants_fd(const nlohmann::json& request) {
  auto fd = request.find("fd");
  return fd != request.end() && fd->is_boolean() && fd->get<bool>();
}

Fd output_memfd(std::string_view bytes) {
  Fd fd(memfd_create("histd-output", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fd;
  while (!bytes.empty()) {
    const ssize_t n = write(fd.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Fd();
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  // The reader may neither change the text nor make it grow in histd's
  // memory accounting.
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) return Fd();
  return fd;
}

Expected<nlohmann::json> read_frame_with_fd(int fd, Fd& passed) {
  unsigned char header[kFrameHeader];
  // The descriptor comes with the frame's first byte: one recvmsg for the
  // header takes it, whatever else arrived.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec iov{header, kFrameHeader};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail_errno("reading from the control socket");
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
      int passed_fd;
      std::memcpy(&passed_fd, CMSG_DATA(c), sizeof(int));
      passed = Fd(passed_fd);
    }
  HISTD_TRY(read_all(fd, reinterpret_cast<char*>(header) + n, kFrameHeader - static_cast<size_t>(n)));
  const uint32_t len = HISTD_TRY(frame_length(header));
  std::string body(len, '\0');
  HISTD_TRY(read_all(fd, body.data(), len));
  return decode_body(body);
}

Expected<uint32_t> frame_length(const unsigned char (&header)[kFrameHeader]) {
  const uint32_t len = header[0] | (header[1] << 8) | (header[2] << 16) | (uint32_t{header[3]} << 24);
  if (len > kMaxFrame) return fail(ErrorKind::Invalid, EMSGSIZE, "control frame too large");
  return len;
}

Expected<nlohmann::json> decode_body(const std::string& body) {
  // A raw NUL is never JSON, but nlohmann's parser takes it for the end of
  // the input: "{...}\0junk" would pass.
  if (body.find('\0') != std::string::npos) return fail(ErrorKind::Invalid, EINVAL, "malformed control frame");
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail(ErrorKind::Invalid, EINVAL, "malformed control frame");
  return j;
}

Status write_frame(int fd, const nlohmann::json& message) {
  const std::string frame = encode_frame(message);
  return write_all(fd, frame.data(), frame.size());
}

Expected<nlohmann::json> read_frame(int fd) {
  unsigned char header[kFrameHeader];
  auto st = read_all(fd, reinterpret_cast<char*>(header), kFrameHeader);
  if (!st) return unexpected(std::move(st).error());
  const uint32_t len = HISTD_TRY(frame_length(header));
  std::string body(len, '\0');
  st = read_all(fd, body.data(), len);
  if (!st) return unexpected(std::move(st).error());
  return decode_body(body);
}

std::optional<std::pair<std::string, std::string>> split_event(const std::string& event) {
  const size_t colon = event.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == event.size() ||
      event.find(':', colon + 1) != std::string::npos)
    return std::nullopt;
  return std::make_pair(event.substr(0, colon), event.substr(colon + 1));
}

}  // namespace histd::control
