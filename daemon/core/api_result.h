// ApiResult<T>: what a SandboxService call gives the HTTP layer. Like Result<T>, but an error
// carries the HTTP status it means (docs/api.md "Conventions"), because the service is the one
// that knows whether a failure is bad input (400), a missing object (404), the wrong state (409),
// a daemon limit (429) or the host's fault (500).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "common/base/result.h"
#include "common/http/error_code.h"

namespace carapace::service {

// The code decides the HTTP status (common/http/error_code.h), so a route cannot answer a
// status with a code that means something else.
struct ApiError {
  http::ErrorCode code = http::ErrorCode::kInternal;
  std::string message;
  int status() const { return http::http_status(code); }
};

inline ApiError bad_request(std::string m) {
  return {http::ErrorCode::kBadRequest, std::move(m)};
}
inline ApiError not_found(std::string m) {
  return {http::ErrorCode::kNotFound, std::move(m)};
}
inline ApiError conflict(std::string m) {
  return {http::ErrorCode::kConflict, std::move(m)};
}
inline ApiError too_large(std::string m) {
  return {http::ErrorCode::kTooLarge, std::move(m)};
}
inline ApiError over_limit(std::string m) {
  return {http::ErrorCode::kLimit, std::move(m)};
}
inline ApiError internal(std::string m) {
  return {http::ErrorCode::kInternal, std::move(m)};
}
inline ApiError unavailable(std::string m) {
  return {http::ErrorCode::kUnavailable, std::move(m)};
}
inline ApiError insufficient_storage(std::string m) {
  return {http::ErrorCode::kInsufficientStorage, std::move(m)};
}
// Bad input from the caller is 400, anything else the host's fault (500).
inline ApiError from_error(const Error& e) {
  return {e.kind == ErrorKind::kInvalidInput ? http::ErrorCode::kBadRequest
                                             : http::ErrorCode::kInternal,
          e.describe()};
}

// As Result<T>: TRY and TRY_STATUS work on it (take_error), and value() on an error throws
// std::bad_variant_access (a bug in the caller, never undefined behaviour).
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  ApiResult(ApiError error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const ApiError& error() const { return std::get<1>(v_); }
  ApiError&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, ApiError> v_;
};

// ApiResult<void>.
class [[nodiscard]] ApiStatus {
 public:
  ApiStatus() = default;
  ApiStatus(ApiError error) : error_(std::move(error)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const ApiError& error() const { return error_; }
  ApiError&& take_error() { return std::move(error_); }

 private:
  ApiError error_;
  bool failed_ = false;
};

}  // namespace carapace::service
