// Bearer tokens for the daemon's optional TCP mode. The server only carries the Authorization
// header; an HttpServerOptions::admit hook (or a handler) calls this to decide.
#pragma once

#include <string_view>

#include "common/http/http_types.h"

namespace carapace::http {

// Compares in time that depends only on `expected`'s length, so response timing does not reveal
// how much of a guess was right.
bool constant_time_equals(std::string_view given, std::string_view expected);

// Whether `headers` carry exactly one "Authorization: Bearer <token>" whose token equals
// `expected`. An empty `expected` never matches (a misconfigured empty token must not open the
// API to everyone).
bool bearer_token_matches(const HttpHeaders& headers, std::string_view expected);

}  // namespace carapace::http
