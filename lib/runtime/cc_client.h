// SPDX-License-Identifier: GPL-2.0-only
// histd's end of histd-cc, the resident compiler (daemon/histd-cc): starts
// it, sends it one request at a time, and reports a lost server as such so
// the Compiler can fall back to spawning clang.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "histd/runtime.h"
#include "runtime/cc_protocol.h"

namespace histd::runtime {

class CcClient {
 public:
  explicit CcClient(std::filesystem::path program) : program_(std::move(program)) {}
  CcClient(const CcClient&) = delete;
  CcClient& operator=(const CcClient&) = delete;
  // Closes the socket (the server ends at EOF) and stops the server.
  ~CcClient();

  // Spawns the server, without waiting for it: it loads its libraries while
  // histd goes on, and the first request waits for it if needed. False when
  // it cannot be spawned. Its working directory is /, whatever histd's is.
  // A request whose answer (or a part of it) takes longer than `timeout`
  // fails. After `shed_after` without a request (zero: never) the server
  // gives back its memory and goes on waiting (histd-cc --shed-after).
  // `primer`, when given, is sent at once: the server compiles it when it
  // is up and keeps what it learns (its prelude: daemon/histd-cc/prelude.h).
  // Nobody waits for its answer; the next request() reads and drops it.
  bool start(std::chrono::milliseconds timeout, std::chrono::milliseconds shed_after,
             const cc::CcRequest* primer = nullptr);
  bool running() const { return static_cast<bool>(sock_); }
  pid_t pid() const { return pid_; }
  // Readable once the server has exited (-1: none).
  int pidfd() const { return pidfd_.get(); }

  struct Reply {
    cc::CcStatus status;
    std::string payload;
  };
  // nullopt when the server is gone, broke the framing or did not answer
  // in time (failure() says which); it is then stopped and reaped, and
  // start() may be called again.
  std::optional<Reply> request(const cc::CcRequest& req);
  const std::string& failure() const { return failure_; }

  // Stops the server (SIGKILL if it still runs) and reaps it; how it ended:
  // "signal 9", "exit status 1", or "" when it was not histd's child to reap
  // (histd daemonized after starting it) or there was none.
  std::string stop();

 private:
  std::filesystem::path program_;
  std::string failure_;
  Fd sock_;
  Fd pidfd_;  // signals reach this server even after its pid was reused
  pid_t pid_ = 0;
  bool owes_answer_ = false;  // the primer's, not read yet
};

}  // namespace histd::runtime
