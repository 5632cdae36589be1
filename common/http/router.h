// Maps method + path to a handler. Patterns are literal segments and {name} parameters, each
// matching one whole non-empty segment: "/sandboxes/{id}/exec". A path that matches a pattern
// under another method gets 405 with an Allow list; one that matches nothing gets 404.
//
// Segments are percent-decoded before matching. A decoded segment that is "." or "..", or that
// holds NUL or '/', is refused (400) here, so no handler ever sees one in a parameter and turns it
// into a file path.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "common/http/http_types.h"

namespace carapace::http {

class ResponseWriter;

// A handler answers through the writer: one send(), or begin_stream() + write_chunk()s +
// finish(). It runs on its connection's thread and may block; other connections go on. Handlers
// of different connections run concurrently, so shared state needs its own lock.
using Handler = std::function<void(HttpRequest& req, ResponseWriter& w)>;
// A handler that builds the whole response at once.
using SimpleHandler = std::function<HttpResponse(const HttpRequest& req)>;

struct RouteOptions {
  // Overrides HttpLimits::max_body_bytes for this route (uploads).
  std::optional<uint64_t> max_body_bytes;
};

class Router {
 public:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;  // "{name}" for parameters
    Handler handler;
    RouteOptions options;
  };

  struct Match {
    enum Kind { kFound, kNotFound, kMethodNotAllowed, kBadPath };
    Kind kind = kNotFound;
    const Route* route = nullptr;                             // kFound
    std::vector<std::pair<std::string, std::string>> params;  // kFound, decoded
    std::string allow;                                        // kMethodNotAllowed: "GET, POST"
    std::string error;                                        // kBadPath
  };

  // Fails on a malformed pattern or a duplicate (method, pattern).
  Status add_streaming(std::string method, std::string_view pattern, Handler handler,
                       RouteOptions options = {});
  Status add(std::string method, std::string_view pattern, SimpleHandler handler,
             RouteOptions options = {});

  // `raw_path` is still percent-encoded. Among matching routes the one with more literal
  // segments wins ("/sandboxes/stats" over "/sandboxes/{id}").
  Match find(std::string_view method, std::string_view raw_path) const;

  bool empty() const { return routes_.empty(); }

 private:
  std::vector<Route> routes_;
};

}  // namespace carapace::http
