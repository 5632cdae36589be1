// JSON at the edge of the API: building responses and reading request bodies. Parse errors come
// back as Results (never exceptions), and the messages say what was wrong and where, because the
// caller is a person or a script reading a 400.
#pragma once

#include <initializer_list>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/http/error_code.h"
#include "common/http/http_types.h"

namespace carapace::http {

// Deeper nesting is refused before parsing: nothing an API takes needs it, and deep values cost
// recursion in dump() and comparisons.
inline constexpr int kMaxJsonDepth = 32;

// `status` with Content-Type application/json. Invalid UTF-8 in strings (guest output) is
// replaced with U+FFFD rather than thrown.
HttpResponse json_response(int status, const nlohmann::json& body);

// {"error": {"code": code, "message": message}} with the code's status (error_code.h).
HttpResponse error_response(ErrorCode code, std::string_view message);
// The same with the code of `status`.
HttpResponse error_response(int status, std::string_view message);
// From an Error: bad input is 400 "bad_request", a host failure 500 "internal".
HttpResponse error_response(const Error& error);

// Any JSON value: depth-limited, duplicate object keys refused, UTF-8 checked.
Result<nlohmann::json> parse_json(std::string_view body);
// A JSON object whose keys all appear in `allowed_keys`; the error names the first unknown field.
// An empty body is refused too: a handler that takes an optional body should check first.
Result<nlohmann::json> parse_json_object(std::string_view body,
                                         std::initializer_list<std::string_view> allowed_keys);

}  // namespace carapace::http
