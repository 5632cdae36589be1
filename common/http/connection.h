// One connection's request loop: read a request, check it against every limit, run its handler,
// write the response, repeat while the connection is persistent. Runs on the connection's own
// thread; the server owns (and closes) the socket.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/http/http_types.h"
#include "common/http/router.h"
#include "common/http/server_options.h"

namespace carapace::http {

// Request body bytes held by all connections together (HttpServerOptions::max_total_body_bytes).
class BodyBudget {
 public:
  explicit BodyBudget(uint64_t cap) : cap_(cap) {}
  bool reserve(uint64_t n);
  void release(uint64_t n) { used_.fetch_sub(n); }
  uint64_t used() const { return used_.load(); }

 private:
  const uint64_t cap_;
  std::atomic<uint64_t> used_{0};
};

// What connection threads share with their server; everything outlives every connection.
struct ServerContext {
  const HttpServerOptions* options = nullptr;
  const Router* router = nullptr;
  int stop_fd = -1;  // readable once stop() begins: idle connections close
  const std::atomic<bool>* stopping = nullptr;
  const std::atomic<bool>* aborting = nullptr;  // past the drain deadline
  BodyBudget* body_budget = nullptr;
  std::atomic<uint64_t>* requests = nullptr;
  std::atomic<uint64_t>* rejected = nullptr;
};

// Serves requests on `fd` (non-blocking) until the client leaves, an error closes the connection,
// or the server stops. Never throws.
void serve_connection(int fd, Transport transport, const ServerContext& ctx);

}  // namespace carapace::http
