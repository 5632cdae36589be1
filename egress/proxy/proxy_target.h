// Where a proxy request wants to go (RFC 9112 3.2.2 absolute-form, 3.2.3 authority-form) and
// the request a forward proxy sends on for plain HTTP. Pure functions over a parsed head.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/http/http_types.h"

namespace carapace::egress {

struct ProxyTarget {
  enum class Kind : uint8_t {
    kConnect,  // CONNECT host:port: a byte tunnel (TLS passes through untouched)
    kForward,  // GET http://host/path: the proxy sends the request on in origin-form
  };
  Kind kind = Kind::kConnect;
  std::string host;  // as the client wrote it; an IPv6 literal without its brackets
  uint16_t port = 0;
  std::string origin_target;  // kForward: "/path?query" (at least "/")
};

// From a head parsed with http::TargetForms::kProxy. CONNECT needs "host:port"; an absolute
// http:// URI may leave the port out (80). User information in the authority ("user@host") is
// refused: it is how a URL hides its real host from a reader. Errors are invalid input, one line.
Result<ProxyTarget> parse_proxy_target(const http::HttpRequest& req);

// The head (with its final empty line) sent upstream for a kForward request: origin-form target,
// Host from the URI (RFC 9112 3.2.2: a proxy replaces whatever Host the client sent), the
// hop-by-hop fields dropped (RFC 9110 7.6.1: Connection and every field it names, Keep-Alive,
// Proxy-Connection, Proxy-Authorization, TE, Trailer, Upgrade) and "Connection: close", so one
// upstream connection carries exactly one request. `keep_alive` (a terminated TLS connection,
// which carries the client's requests one after another): no "Connection: close" unless the
// client itself did not keep the connection (wants_keep_alive).
std::string forward_request_head(const http::HttpRequest& req, const ProxyTarget& target,
                                 bool keep_alive = false);

}  // namespace carapace::egress
