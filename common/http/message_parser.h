// Parsing of HTTP/1.1 message heads (RFC 9112) and the framing rules that decide where a body
// ends. Pure functions over bytes already read: the fuzzable core of the server and the client.
//
// The rules are strict on purpose. Anything two parsers could read differently (request
// smuggling: Content-Length with Transfer-Encoding, duplicate lengths, obsolete line folding,
// bare CR or LF) is refused instead of repaired.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/http_types.h"

namespace carapace::http {

// Why a request is refused before any handler runs: the status to answer and a message for the
// error body.
struct Rejection {
  int status;
  std::string message;
};

// Which request-target forms (RFC 9112 3.2) a server takes. An origin server takes origin-form
// only ("/path?query"); a forward proxy takes authority-form for CONNECT ("host:port", 3.2.3)
// and absolute-form for every other method ("http://host/path", 3.2.2) -- and no origin-form,
// since it serves no resources of its own.
enum class TargetForms { kOrigin, kProxy };

// Fills method, target, path, query_string, minor_version and headers from `head` (lines ending
// in CRLF, without the final empty line). Only HTTP/1.0 and HTTP/1.1 are spoken (400 otherwise);
// a well-formed but unknown method gets 501; too many fields 431. With TargetForms::kProxy,
// `target` is the authority or absolute URI as sent and path/query_string stay empty.
std::optional<Rejection> parse_request_head(std::string_view head, size_t max_headers,
                                            HttpRequest& out,
                                            TargetForms forms = TargetForms::kOrigin);

struct StatusLine {
  int minor_version = 1;
  int status = 0;
};

// Parses a response head (for the client): status line and fields.
Result<StatusLine> parse_response_head(std::string_view head, size_t max_headers, HttpHeaders& out);

struct BodyFraming {
  enum Kind { kNone, kLength, kChunked, kUntilClose };
  Kind kind = kNone;
  uint64_t length = 0;  // kLength only
};

// RFC 9112 6.3 for a request. Transfer-Encoding must be exactly "chunked" (other codings 501)
// and may not come with Content-Length or in HTTP/1.0; Content-Length must be one plain decimal.
std::optional<Rejection> request_framing(const HttpRequest& req, BodyFraming& out);

// RFC 9112 6.3 for a response to `method`.
Result<BodyFraming> response_framing(std::string_view method, int status,
                                     const HttpHeaders& headers);

// Whether the connection may carry another request after this one (HTTP/1.1 default on,
// HTTP/1.0 only with "Connection: keep-alive").
bool wants_keep_alive(const HttpRequest& req);

// Whether a request over TCP names the loopback host it reached (Host: 127.0.0.1[:port] or
// localhost[:port]). A browser page whose DNS name was rebound to 127.0.0.1 sends its own name,
// so this stops it from driving the API.
bool host_is_loopback(const HttpHeaders& headers);

}  // namespace carapace::http
