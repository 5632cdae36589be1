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
};

// The error of one code: bad_request("vcpus: ...") and so on, one per code the core answers.
template <http::ErrorCode C>
ApiError api_error(std::string message) {
  return {C, std::move(message)};
}
inline constexpr auto bad_request = api_error<http::ErrorCode::kBadRequest>;
inline constexpr auto not_found = api_error<http::ErrorCode::kNotFound>;
inline constexpr auto conflict = api_error<http::ErrorCode::kConflict>;
inline constexpr auto too_large = api_error<http::ErrorCode::kTooLarge>;
inline constexpr auto over_limit = api_error<http::ErrorCode::kLimit>;
inline constexpr auto internal = api_error<http::ErrorCode::kInternal>;
inline constexpr auto unavailable = api_error<http::ErrorCode::kUnavailable>;
inline constexpr auto insufficient_storage = api_error<http::ErrorCode::kInsufficientStorage>;
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
