// SPDX-License-Identifier: GPL-2.0-only
// The Compiler's resident compiler (histd-cc): starting it, asking it, and
// replacing it when it fails. Private to lib/runtime.
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "histd/runtime.h"
#include "runtime/cc_client.h"

namespace histd::runtime {

class Compiler::Resident {
 public:
  explicit Resident(const std::filesystem::path& program);
  // Stops the watcher, then the server.
  ~Resident();
  Resident(const Resident&) = delete;
  Resident& operator=(const Resident&) = delete;

  void start();
  // Sent to each server as it starts (Compiler::set_prelude); before start().
  void set_primer(cc::CcRequest primer);
  void watch();
  void set_timeout(std::chrono::milliseconds timeout);
  void set_idle_stop(std::chrono::milliseconds after);
  void set_idle_shed(std::chrono::milliseconds after);
  // Starts the server again if idleness stopped it.
  void warm();
  // The server's answer: an object, or the unit's diagnostics. nullopt: the
  // server failed (lost, hung, failed on its own, or given up on after
  // kMaxServerFailures): clang must compile this unit; the failure is logged
  // and the next server started.
  std::optional<CcClient::Reply> ask(const cc::CcRequest& req);
  void count_clang();
  pid_t pid();
  Stats stats();

 private:
  // Starts a server and tells the watcher to watch it; under mu_.
  // `prime`: send it the primer (set_primer), when no compile is waiting
  // for it: one that is would wait for the primer and the prelude too.
  bool start_locked(bool prime);
  // One failure in a row more, logged; the next server, unless it was the
  // last try. `compiling`: the failure cost a compile (clang does it).
  void failed_locked(const std::string& what, bool compiling);
  void watch_loop();
  // How long the watcher may sleep before the server is idle long enough
  // to stop (-1: forever); under mu_.
  int idle_wait_ms_locked() const;
  // Stops the server if it has been idle for idle_stop_; under mu_.
  void stop_if_idle_locked();

  std::filesystem::path program_;
  std::optional<cc::CcRequest> primer_;
  std::mutex mu_;
  CcClient client_;
  bool wanted_ = false;  // start() was called
  int failures_ = 0;     // in a row, without an answer
  std::chrono::milliseconds timeout_ = kServerTimeout;
  std::chrono::milliseconds idle_stop_{0};
  std::chrono::milliseconds idle_shed_{0};
  std::chrono::steady_clock::time_point last_used_ = std::chrono::steady_clock::now();
  bool idle_stopped_ = false;  // the last server was stopped for idleness (warm() restarts it)
  Stats stats_;
  Fd wake_;  // eventfd: a new server to watch, or a new idle time
  // eventfd, written once when the watcher is to return and never read: a
  // flag checked beside the wake-up could be set between the check and the
  // read that took its wake-up with others', and the watcher then waited
  // for ever in the destructor's join.
  Fd stop_;
  std::thread watcher_;
};

}  // namespace histd::runtime
