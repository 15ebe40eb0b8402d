// SPDX-License-Identifier: GPL-2.0-only
// Errors as values. Two kinds cross module boundaries:
//  - Diagnostic: a user's command is wrong; carries a code and the byte span
//    of the offending token inside the logged command (see diagnostic.h).
//  - Error: the system failed (tracefs missing, EPERM, clang, verifier).
// Result<T, E> holds either a T or an E; Expected<T> is Result<T, Error>.
#pragma once

#include <cerrno>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace histd {

template <class E>
struct Unexpected {
  E error;
};

template <class E>
Unexpected<std::decay_t<E>> unexpected(E&& e) {
  return Unexpected<std::decay_t<E>>{std::forward<E>(e)};
}

// Stands in for "no value" so that Result<Unit, E> works like Result<void, E>.
struct Unit {
  friend bool operator==(Unit, Unit) { return true; }
};

template <class T, class E>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  template <class U,
            std::enable_if_t<std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Result>, int> = 0>
  Result(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}
  template <class G>
  Result(Unexpected<G> e) : v_(std::in_place_index<1>, std::move(e.error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  E& error() & { return std::get<1>(v_); }
  const E& error() const& { return std::get<1>(v_); }
  E&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, E> v_;
};

enum class ErrorKind {
  System,    // a syscall failed; err holds errno
  Bpf,       // libbpf / verifier; context holds the log
  Compile,   // clang rejected generated code (a histd bug) or is missing
  NotFound,  // an event, file or trigger does not exist
  Invalid,   // a request that is not a command error but still bad
  Busy,      // in use by something else
  Exists,    // already present
  // A command stopped before its first program's compile, which the
  // engine makes outside its lock and then runs the command again
  // (deploy::CompileOutside): never shown to a user.
  NotCompiled,
};

struct Error {
  ErrorKind kind = ErrorKind::System;
  int err = EINVAL;  // positive errno, returned to FUSE writers and socket clients
  std::string context;
};

inline Unexpected<Error> fail(ErrorKind kind, int err, std::string context) {
  return Unexpected<Error>{Error{kind, err, std::move(context)}};
}
// errno-style failure from the current errno value.
Unexpected<Error> fail_errno(std::string context);

template <class T>
using Expected = Result<T, Error>;
using Status = Result<Unit, Error>;

inline Status ok_status() { return Unit{}; }

}  // namespace histd

// Propagates an error out of the enclosing function, which must return a
// Result with the same error type. Evaluates to the value otherwise.
#define HISTD_TRY(expr)                                                                            \
  ({                                                                                               \
    auto histd_try_result_ = (expr);                                                               \
    if (!histd_try_result_.ok()) return ::histd::unexpected(std::move(histd_try_result_).error()); \
    std::move(histd_try_result_).value();                                                          \
  })
