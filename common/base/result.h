// Result<T, E>: error values instead of exceptions on every path a guest or a client can reach.
// E is Error everywhere except at the daemon's core, whose errors carry an HTTP meaning
// (daemon/core/api_result.h); both use the same type, TRY and TRY_STATUS.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace carapace {

// What an error is about: bad input from a user (a CLI flag, a kernel file) or a failure of the
// host (KVM, memory, I/O). Callers map them to different exit statuses and HTTP codes.
enum class ErrorKind { kHost, kInvalidInput };

// An error: a one-line message for the user and, for host failures, the errno that caused it.
struct Error {
  std::string message;
  int sys_errno = 0;
  ErrorKind kind = ErrorKind::kHost;

  // "message: strerror(errno)" when an errno is attached.
  std::string describe() const;
};

// Builds an Error from errno after a failed system call.
Error sys_error(std::string what, int err = errno);
Error make_error(std::string what);
// Marks an error as caused by bad input.
Error as_invalid_input(Error e);

// value() or error() on the wrong alternative throws std::bad_variant_access: a bug in the
// caller, never undefined behaviour.
template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  const E& error() const { return std::get<1>(v_); }
  E&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, E> v_;
};

// Result<void, E>: success carries nothing.
template <typename E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : err_(std::move(error)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const E& error() const { return err_; }
  E&& take_error() { return std::move(err_); }

 private:
  E err_{};
  bool failed_ = false;
};

using Status = Result<void>;

inline Status ok_status() {
  return Status();
}

}  // namespace carapace

// TRY(expr): evaluates a Result; returns its error from the enclosing function, else yields the
// value. Uses a GNU statement expression (GCC and Clang), as the kernel and many VMMs do.
#define CARAPACE_CONCAT_(a, b) a##b
#define CARAPACE_CONCAT(a, b) CARAPACE_CONCAT_(a, b)
#define TRY(expr)                                            \
  ({                                                         \
    auto&& CARAPACE_CONCAT(try_r_, __LINE__) = (expr);       \
    if (!CARAPACE_CONCAT(try_r_, __LINE__).ok())             \
      return CARAPACE_CONCAT(try_r_, __LINE__).take_error(); \
    std::move(CARAPACE_CONCAT(try_r_, __LINE__)).value();    \
  })
// TRY_STATUS(expr): as TRY for Result<void>.
#define TRY_STATUS(expr)                                     \
  do {                                                       \
    auto&& CARAPACE_CONCAT(try_s_, __LINE__) = (expr);       \
    if (!CARAPACE_CONCAT(try_s_, __LINE__).ok())             \
      return CARAPACE_CONCAT(try_s_, __LINE__).take_error(); \
  } while (0)
