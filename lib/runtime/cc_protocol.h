// SPDX-License-Identifier: GPL-2.0-only
// The framing between histd and histd-cc, its resident compiler. Shared by
// both sides and nothing else: histd-cc compiles cc_protocol.cpp itself,
// so that it links no histd library.
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

#include <cstdint>
#include <string>
#include <vector>

namespace histd::runtime::cc {

enum class CcStatus : uint32_t { Object = 0, Failed = 1, ServerError = 2 };

// Larger frames are malformed: a generated unit is tens of KiB.
inline constexpr uint32_t kMaxFrame = 64u << 20;
inline constexpr uint32_t kMaxArgs = 256;

// The whole buffer, retried on EINTR; false when the peer is gone.
bool write_all(int fd, const void* data, size_t len);
bool read_all(int fd, void* data, size_t len);

struct CcRequest {
  std::vector<std::string> args;
  std::string input;
  std::string source;
};

std::string encode(const CcRequest& r);
// False on EOF or a malformed request.
bool read_request(int fd, CcRequest& r);
bool write_response(int fd, CcStatus status, const std::string& payload);
bool read_response(int fd, CcStatus& status, std::string& payload);

}  // namespace histd::runtime::cc
