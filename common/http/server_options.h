// What an HttpServer listens on and how much it lets clients use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/http/http_types.h"

namespace carapace::http {

struct HttpServerOptions {
  std::string unix_path;             // "" = no Unix listener
  std::optional<uint16_t> tcp_port;  // 127.0.0.1 only; 0 = any free port
  size_t max_connections = 64;
  // Request bodies held by all connections together; a request that would pass it gets 503.
  // Bounds memory even when every connection uploads at its route's maximum.
  uint64_t max_total_body_bytes = 256ull << 20;
  HttpLimits limits;
  // How long stop() lets in-flight requests finish before it cuts their connections.
  std::chrono::milliseconds drain_timeout{5'000};
  // On the TCP listener, refuse (421) requests whose Host is not a loopback name: a web page
  // that rebinds its DNS name to 127.0.0.1 still sends its own name.
  bool require_loopback_host = true;
  // Called once a request's head is parsed and routed, before any body byte is read. Returning
  // a response refuses the request with it. The place for bearer-token checks: an unauthenticated
  // client cannot make the server read or buffer a body. Runs on connection threads,
  // concurrently.
  std::function<std::optional<HttpResponse>(const HttpRequest& head)> admit;
};

}  // namespace carapace::http
