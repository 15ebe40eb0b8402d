// SPDX-License-Identifier: GPL-2.0-only
#include "runtime/cc_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace histd::runtime::cc {

namespace {

// Integers are u32 in host order; bytes follow their length.
void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_bytes(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

bool get_u32(int fd, uint32_t& v) { return read_all(fd, &v, sizeof v); }

bool get_bytes(int fd, std::string& s) {
  uint32_t len = 0;
  if (!get_u32(fd, len) || len > kMaxFrame) return false;
  s.resize(len);
  return len == 0 || read_all(fd, s.data(), len);
}

}  // namespace

bool write_all(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    // MSG_NOSIGNAL: a dead peer is an error value, not SIGPIPE.
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

std::string encode(const CcRequest& r) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(r.args.size()));
  for (const std::string& a : r.args) put_bytes(out, a);
  put_bytes(out, r.input);
  put_bytes(out, r.source);
  return out;
}

bool read_request(int fd, CcRequest& r) {
  uint32_t argc = 0;
  if (!get_u32(fd, argc) || argc > kMaxArgs) return false;
  r.args.resize(argc);
  for (std::string& a : r.args)
    if (!get_bytes(fd, a)) return false;
  return get_bytes(fd, r.input) && get_bytes(fd, r.source);
}

bool write_response(int fd, CcStatus status, const std::string& payload) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(status));
  put_bytes(out, payload);
  return write_all(fd, out.data(), out.size());
}

bool read_response(int fd, CcStatus& status, std::string& payload) {
  uint32_t s = 0;
  if (!get_u32(fd, s) || s > static_cast<uint32_t>(CcStatus::ServerError)) return false;
  status = static_cast<CcStatus>(s);
  return get_bytes(fd, payload);
}

}  // namespace histd::runtime::cc
