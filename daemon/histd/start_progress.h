// Asking systemd for more time while histd is busy starting or reloading.
//
// Under systemd (Type=notify) histd is "activating" until READY=1, which it
// sends once its saved triggers are restored and its configuration applied;
// a reload is "reloading" from RELOADING=1 to READY=1. Both are bounded by
// TimeoutStartSec= (90 s by default). A restore is quick while the object
// cache is warm, but an upgrade changes the compiler, every cached object
// is stale, and each saved program is compiled again: at 50-90 ms a unit, a
// thousand triggers on events of their own come near or past 90 s on a
// slow day, and systemd would kill histd midway and start it again. So while units keep being compiled, histd asks for
// more time (EXTEND_TIMEOUT_USEC) and says how far it got (STATUS=). A
// compile that hangs stops the asking: after kWindow without one finished,
// and past TimeoutStartSec=, systemd's timeout applies as it always did.
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
  // A datagram to systemd a look at most: cheap, and even a fast restore
  // is seen making progress.
  static constexpr std::chrono::milliseconds kPoll{250};

  // Watches `compiler` until destroyed; `doing` names the work in the
  // status ("starting"). Without NOTIFY_SOCKET (not under
  // systemd) nothing is sent.
  StartProgress(std::shared_ptr<const runtime::Compiler> compiler, std::string doing);
  ~StartProgress();
  StartProgress(const StartProgress&) = delete;
  StartProgress& operator=(const StartProgress&) = delete;

 private:
  void run();
  uint64_t compiled() const;

  std::shared_ptr<const runtime::Compiler> compiler_;
  std::string doing_;
  uint64_t base_ = 0;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace histd::daemon
