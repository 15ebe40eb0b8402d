// SPDX-License-Identifier: GPL-2.0-only
#include "histd/result.h"

#include <cerrno>
#include <cstring>

namespace histd {

Unexpected<Error> fail_errno(std::string context) {
  int e = errno;
  return Unexpected<Error>{Error{ErrorKind::System, e, context + ": " + std::strerror(e)}};
}

}  // namespace histd
