// ApiResult<T>: what a SandboxService call gives the HTTP layer: Result<T, ApiError>, whose error
// carries the HTTP status it means (docs/api.md "Conventions"), because the service is the one
// that knows whether a failure is bad input (400), a missing object (404), the wrong state (409),
// a daemon limit (429) or the host's fault (500).
#pragma once

#include <string>
#include <utility>

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

// The daemon core's results: the one Result type with an ApiError (TRY and TRY_STATUS work).
template <typename T>
using ApiResult = Result<T, ApiError>;
using ApiStatus = Result<void, ApiError>;

}  // namespace carapace::service
