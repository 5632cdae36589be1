// ApiResult<T>: what a SandboxService call gives the HTTP layer. Like Result<T>, but an error
// carries the HTTP status it means (docs/api.md "Conventions"), because the service is the one
// that knows whether a failure is bad input (400), a missing object (404), the wrong state (409),
// a daemon limit (429) or the host's fault (500).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "vmm/base/result.h"

namespace carapace::service {

struct ApiError {
  int status = 500;
  std::string message;
};

inline ApiError bad_request(std::string m) {
  return {400, std::move(m)};
}
inline ApiError not_found(std::string m) {
  return {404, std::move(m)};
}
inline ApiError conflict(std::string m) {
  return {409, std::move(m)};
}
inline ApiError too_large(std::string m) {
  return {413, std::move(m)};
}
inline ApiError over_limit(std::string m) {
  return {429, std::move(m)};
}
inline ApiError internal(std::string m) {
  return {500, std::move(m)};
}
// Bad input from the caller is 400, anything else the host's fault (500).
inline ApiError from_error(const Error& e) {
  return {e.kind == ErrorKind::kInvalidInput ? 400 : 500, e.describe()};
}

template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : value_(std::move(value)) {}
  ApiResult(ApiError error) : error_(std::move(error)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  T& operator*() { return *value_; }
  const ApiError& error() const { return error_; }

 private:
  std::optional<T> value_;
  ApiError error_;
};

// ApiResult<void>.
class [[nodiscard]] ApiStatus {
 public:
  ApiStatus() = default;
  ApiStatus(ApiError error) : error_(std::move(error)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const ApiError& error() const { return error_; }

 private:
  ApiError error_;
  bool failed_ = false;
};

}  // namespace carapace::service
