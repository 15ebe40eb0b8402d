// SPDX-License-Identifier: GPL-2.0-only
#include "histd/fd.h"

#include <unistd.h>

namespace histd {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace histd
