// SPDX-License-Identifier: GPL-2.0-only
// Asking systemd for more time while histd is busy starting or reloading.
//
// Under systemd (Type=notify) histd is "activating" until READY=1, which it
// sends once its saved triggers are restored and its configuration applied;
// a reload is "reloading" from RELOADING=1 to READY=1. Both are bounded by
// TimeoutStartSec= (90 s by default, as little as 1 s where an operator set
// it so). Any phase can be slow: on a loaded machine the first compile alone
// may take seconds, and after an upgrade changed the compiler every saved
// program is compiled again (a thousand triggers on events of their own
// come near or past 90 s on a slow day). So from the moment it begins,
// histd asks for more time (EXTEND_TIMEOUT_USEC, kExtend from now) at once
// and then every kPoll, saying what it is doing (STATUS=), at a rhythm of
// its own, not at each compile's end. Only a start that has stopped moving
// stops the asking: no phase begun and no unit compiled for kWindow, and
// systemd's timeout applies as it always did.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "histd/runtime.h"

namespace histd::daemon {

class StartProgress {
 public:
  // Longer than a compile can take: runtime::Compiler waits kServerTimeout
  // for a hung histd-cc, then asks clang.
  static constexpr std::chrono::seconds kWindow{30};
  static_assert(kWindow > runtime::Compiler::kServerTimeout);
  // What each message asks for: enough for the asking thread itself to be
  // late on a machine whose cores are saturated.
  static constexpr std::chrono::seconds kExtend{10};
  // How often it asks: a datagram to systemd, cheap.
  static constexpr std::chrono::milliseconds kPoll{250};

  // Asks at once, then every kPoll until destroyed; `doing` names the work
  // in the status ("starting"). Without NOTIFY_SOCKET (not under systemd)
  // nothing is sent.
  explicit StartProgress(std::string doing);
  ~StartProgress();
  StartProgress(const StartProgress&) = delete;
  StartProgress& operator=(const StartProgress&) = delete;

  // A phase begins ("restoring saved triggers"): said in the status, and
  // progress.
  void phase(std::string name);
  // Units `compiler` compiles from now on count as progress and are said.
  void watch(std::shared_ptr<const runtime::Compiler> compiler);

 private:
  void run();
  // The message now, and whether the start moved within kWindow.
  std::string message_locked(std::chrono::steady_clock::time_point now, bool& moving);

  const std::string doing_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::string phase_;
  std::shared_ptr<const runtime::Compiler> compiler_;
  uint64_t base_ = 0;      // compiles before watch()
  uint64_t compiled_ = 0;  // since watch(), at the last look
  std::chrono::steady_clock::time_point moved_;
  std::thread thread_;
};

}  // namespace histd::daemon
