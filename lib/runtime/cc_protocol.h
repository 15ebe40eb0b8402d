// SPDX-License-Identifier: GPL-2.0-only
// The framing between histd and histd-cc, its resident compiler. Shared by
// both sides and nothing else; header-only so histd-cc links no histd code.
//
// One request, then one response, on a SOCK_STREAM socketpair; integers are
// u32 in host order (both ends are the same machine and build).
//   request:  argc, argc x (len, bytes): the clang driver arguments, argv[0]
//             excluded, naming `input` as the source and an output file that
//             is never written; (len, bytes) input, the source's file name;
//             (len, bytes) the source text
//   response: status, (len, bytes): the object (CcStatus::Object), the
//             diagnostics of compiling the unit, exactly what clang would
//             print (CcStatus::Failed), or why the server could not compile
//             at all (CcStatus::ServerError: histd then asks clang)
// A server that cannot answer (it crashed, was killed, got a malformed
// request) closes the socket; histd then compiles by spawning clang.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

namespace histd::runtime::cc {

enum class CcStatus : uint32_t { Object = 0, Failed = 1, ServerError = 2 };

// Larger frames are malformed: a generated unit is tens of KiB.
inline constexpr uint32_t kMaxFrame = 64u << 20;
inline constexpr uint32_t kMaxArgs = 256;

inline bool write_all(int fd, const void* data, size_t len) {
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

inline bool read_all(int fd, void* data, size_t len) {
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

inline void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

inline void put_bytes(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

inline bool get_u32(int fd, uint32_t& v) { return read_all(fd, &v, sizeof v); }

inline bool get_bytes(int fd, std::string& s) {
  uint32_t len = 0;
  if (!get_u32(fd, len) || len > kMaxFrame) return false;
  s.resize(len);
  return len == 0 || read_all(fd, s.data(), len);
}

struct CcRequest {
  std::vector<std::string> args;
  std::string input;
  std::string source;
};

inline std::string encode(const CcRequest& r) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(r.args.size()));
  for (const std::string& a : r.args) put_bytes(out, a);
  put_bytes(out, r.input);
  put_bytes(out, r.source);
  return out;
}

// False on EOF or a malformed request.
inline bool read_request(int fd, CcRequest& r) {
  uint32_t argc = 0;
  if (!get_u32(fd, argc) || argc > kMaxArgs) return false;
  r.args.resize(argc);
  for (std::string& a : r.args)
    if (!get_bytes(fd, a)) return false;
  return get_bytes(fd, r.input) && get_bytes(fd, r.source);
}

inline bool write_response(int fd, CcStatus status, const std::string& payload) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(status));
  put_bytes(out, payload);
  return write_all(fd, out.data(), out.size());
}

inline bool read_response(int fd, CcStatus& status, std::string& payload) {
  uint32_t s = 0;
  if (!get_u32(fd, s) || s > static_cast<uint32_t>(CcStatus::ServerError)) return false;
  status = static_cast<CcStatus>(s);
  return get_bytes(fd, payload);
}

}  // namespace histd::runtime::cc
