// Plain data shared by the HTTP server and client: header fields, requests, responses, limits.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http/query.h"

namespace carapace::http {

// ASCII case-insensitive comparison (header names, tokens). Never locale dependent.
bool iequals(std::string_view a, std::string_view b);
// Without the optional white space (SP and HTAB) at either end (RFC 9110 §5.6.3, OWS).
std::string_view trim_ows(std::string_view s);
// The value of one hex digit (HEXDIG, RFC 5234 §B.1, either case), -1 for any other byte: chunk
// sizes (RFC 9112 §7.1) and percent-encoding (RFC 3986 §2.1).
int hex_digit(char c);

// Header fields in arrival order. Names compare case-insensitively (RFC 9110 5.1); a repeated
// field stays as separate entries so framing checks can see duplicates.
class HttpHeaders {
 public:
  using Field = std::pair<std::string, std::string>;

  HttpHeaders() = default;
  HttpHeaders(std::initializer_list<Field> fields) : fields_(fields) {}

  void add(std::string name, std::string value);
  // Replaces every field called `name` with one.
  void set(std::string name, std::string value);
  void remove(std::string_view name);
  // The first field called `name`.
  std::optional<std::string_view> get(std::string_view name) const;
  size_t count(std::string_view name) const;
  bool has(std::string_view name) const { return count(name) > 0; }
  // Whether a comma-separated list field (Connection, ...) names `token`, in any of its fields.
  bool has_token(std::string_view name, std::string_view token) const;

  const std::vector<Field>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }

 private:
  std::vector<Field> fields_;
};

// Which listener a request came in on: the TCP one is reachable by every local user (and by
// browsers), so handlers and the server treat it with more suspicion.
enum class Transport { kUnix, kTcp };

struct HttpRequest {
  std::string method;        // case-sensitive token, e.g. "GET"
  std::string target;        // as sent: path and query, still percent-encoded
  std::string path;          // target before '?', still percent-encoded
  std::string query_string;  // target after '?', still percent-encoded
  int minor_version = 1;     // HTTP/1.<minor_version>
  HttpHeaders headers;
  std::string body;  // decoded (chunked framing removed)
  Transport transport = Transport::kUnix;

  // Filled by the server before the handler runs, percent-decoded.
  std::vector<std::pair<std::string, std::string>> path_params;
  QueryParams query;

  // The value of the pattern's {name}; "" when the route has no such parameter.
  std::string_view param(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;
  std::string body;
};

// Bounds on what one client can make the server read, hold or wait for. Defaults suit the
// control API; the daemon raises max_body_bytes per route for uploads.
struct HttpLimits {
  size_t max_head_bytes = 16 * 1024;  // request line + header fields
  size_t max_headers = 100;
  uint64_t max_body_bytes = 1 << 20;
  // From the first byte of a request (or the accept) to the end of its head.
  std::chrono::milliseconds header_timeout{10'000};
  // A body must arrive within body_timeout plus one second per min_body_rate bytes received, so
  // big uploads get time and a trickle does not.
  std::chrono::milliseconds body_timeout{30'000};
  uint64_t min_body_rate = 256 * 1024;
  // Between requests on a persistent connection.
  std::chrono::milliseconds idle_timeout{60'000};
  // Longest a response write may make no progress (a client that stops reading).
  std::chrono::milliseconds write_timeout{30'000};
};

// "OK", "Not Found", ...; "Unknown" for codes this server never sends.
std::string_view reason_phrase(int status);

// tchar from RFC 9110 5.6.2: what method and header names are made of.
bool is_token(std::string_view s);

}  // namespace carapace::http
