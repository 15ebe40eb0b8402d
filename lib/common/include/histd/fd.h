// SPDX-License-Identifier: GPL-2.0-only
// An owned file descriptor: closed when its owner goes. Shared by every
// module that holds one (BPF maps and programs, the control socket, lock
// files), so that holding an fd does not pull in the BPF runtime.
#pragma once

namespace histd {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace histd
