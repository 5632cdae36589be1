// The API error codes: the one vocabulary for `{"error": {"code": ...}}` at every layer (the
// HTTP server's own refusals, the daemon's routes, the per-VM control API, the C++ client, and
// through docs/api.md and docs/openapi.yaml the Python client). Each code has exactly one HTTP
// status and each status the server sends has exactly one code, so a client may switch on
// either. A unit test holds this table, the docs and the Python client to each other.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace carapace::http {

enum class ErrorCode : uint8_t {
  kBadRequest,          // 400: malformed request, unknown field, wrong type, bad value
  kUnauthorized,        // 401: TCP without the right bearer token
  kNotFound,            // 404: no such resource, template, sandbox or file
  kMethodNotAllowed,    // 405: known path, other method
  kRequestTimeout,      // 408: request head or body not received in time
  kConflict,            // 409: the object is in the wrong state
  kTooLarge,            // 413: a request body (or a file asked for) over a limit
  kUriTooLong,          // 414: request line too long
  kExpectationFailed,   // 417: an Expect other than 100-continue
  kMisdirectedRequest,  // 421: a Host other than localhost on the TCP listener
  kLimit,               // 429: a daemon limit (sandboxes, memory), not a rate limit
  kHeadersTooLarge,     // 431: request header fields too large
  kInternal,            // 500: the daemon or the host failed
  kNotImplemented,      // 501: unknown method or transfer coding
  kUnavailable,         // 503: shutting down, busy, or too many connections
  kInsufficientStorage  // 507: the sandbox's disk is full
};

struct ErrorCodeInfo {
  ErrorCode code;
  int status;
  std::string_view name;
};

// In enum order: kErrorCodes[size_t(code)].code == code.
inline constexpr std::array<ErrorCodeInfo, 16> kErrorCodes = {{
    {ErrorCode::kBadRequest, 400, "bad_request"},
    {ErrorCode::kUnauthorized, 401, "unauthorized"},
    {ErrorCode::kNotFound, 404, "not_found"},
    {ErrorCode::kMethodNotAllowed, 405, "method_not_allowed"},
    {ErrorCode::kRequestTimeout, 408, "request_timeout"},
    {ErrorCode::kConflict, 409, "conflict"},
    {ErrorCode::kTooLarge, 413, "too_large"},
    {ErrorCode::kUriTooLong, 414, "uri_too_long"},
    {ErrorCode::kExpectationFailed, 417, "expectation_failed"},
    {ErrorCode::kMisdirectedRequest, 421, "misdirected_request"},
    {ErrorCode::kLimit, 429, "limit"},
    {ErrorCode::kHeadersTooLarge, 431, "headers_too_large"},
    {ErrorCode::kInternal, 500, "internal"},
    {ErrorCode::kNotImplemented, 501, "not_implemented"},
    {ErrorCode::kUnavailable, 503, "unavailable"},
    {ErrorCode::kInsufficientStorage, 507, "insufficient_storage"},
}};

constexpr bool error_codes_in_enum_order() {
  for (size_t i = 0; i < kErrorCodes.size(); ++i)
    if (static_cast<size_t>(kErrorCodes[i].code) != i) return false;
  return true;
}
static_assert(error_codes_in_enum_order(), "kErrorCodes must list the codes in enum order");

constexpr const ErrorCodeInfo& error_code_info(ErrorCode c) {
  return kErrorCodes[static_cast<size_t>(c)];
}
constexpr std::string_view to_string(ErrorCode c) {
  return error_code_info(c).name;
}
constexpr int http_status(ErrorCode c) {
  return error_code_info(c).status;
}

// The code of `status`; a status outside the table is "bad_request" below 500, else "internal"
// (nothing in carapace sends one, and a client still gets a known code).
constexpr ErrorCode error_code_for_status(int status) {
  for (const auto& e : kErrorCodes)
    if (e.status == status) return e.code;
  return status >= 500 ? ErrorCode::kInternal : ErrorCode::kBadRequest;
}

// The code named `name`, if it is one of ours.
constexpr std::optional<ErrorCode> parse_error_code(std::string_view name) {
  for (const auto& e : kErrorCodes)
    if (e.name == name) return e.code;
  return std::nullopt;
}

}  // namespace carapace::http
