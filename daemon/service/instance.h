// SPDX-License-Identifier: GPL-2.0-only
// One histd per tree. A second histd on the same state directory, mount,
// socket or pin directory used to stack a mount on the first one's, take
// its socket and, on exit, delete the first one's socket and pins. Now it
// is refused before it touches any of them, and the first one goes on
// unchanged; what a dead histd (kill -9) left is cleaned up instead.
#pragma once

#include <sys/types.h>

#include <string>

#include "histd/fd.h"
#include "histd/result.h"
#include "service/options.h"

namespace histd::daemon {

class Instance {
 public:
  // In this order, each refusal ending the claim with its message:
  //  - the state directory (startup.h's checks; made if missing) is locked
  //    (flock on the directory itself: the kernel drops the lock when its
  //    holder dies, kill -9 included): "another histd (pid N) holds DIR";
  //    its cache directory and state file are checked;
  //  - a live histd tree at --mount: "another histd serves MOUNT"; a live
  //    mount of anything else there: refused too (histd would stack on it);
  //  - a socket at --socket that accepts a connection: "another histd (pid
  //    N) listens on SOCKET" (a stale one is left to control::Server);
  //  - the pin directory (bpffs mounted at /sys/fs/bpf first if needed,
  //    made if missing, checked as the state directory) is locked the
  //    same way: "another histd (pid N) holds PIN-DIR".
  // Then a dead histd's tree at --mount (ENOTCONN) is detached.
  // The locks last as long as the Instance (and across fork()).
  static Expected<Instance> claim(const Options& opt);

  // False when --pin-dir is empty.
  bool pins() const { return static_cast<bool>(pin_lock_); }

 private:
  Instance() = default;
  Fd state_lock_;
  Fd pin_lock_;
};

// "histd (pid N)" or "a process (pid N, comm)": who holds an flock on the
// file `fd` is open on, from /proc/*/fdinfo ("" if none is found).
std::string lock_holder(int fd);

}  // namespace histd::daemon
