// HttpServer: a small HTTP/1.1 server for carapace's control APIs (`carapace run --api-sock`,
// `carapace serve`). See README.md in this folder for the design.
//
// Threads: one acceptor thread, plus one thread per open connection up to max_connections.
// A connection's thread reads each request, runs its handler and writes the response, so a
// handler may block (a snapshot, a minutes-long exec stream) without delaying any other
// connection. Past the cap a new connection gets 503 at once and is closed; open ones go on.
//
//   Router r;
//   (void)r.add("GET", "/status", [](const HttpRequest&) { return json_response(200, {...}); });
//   HttpServerOptions o;
//   o.unix_path = "/run/vm.sock";
//   auto server = HttpServer::start(std::move(o), std::move(r));
//   ...
//   (*server)->stop();  // also done by the destructor
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/base/event_fd.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "common/http/connection.h"
#include "common/http/http_types.h"
#include "common/http/listener.h"
#include "common/http/router.h"
#include "common/http/server_options.h"

namespace carapace::http {

struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t refused_busy = 0;  // 503 for max_connections or thread creation failure
  uint64_t requests = 0;      // handed to a handler
  uint64_t rejected = 0;      // answered 4xx/5xx by the server itself (parse, limits, routing)
  size_t open_connections = 0;
};

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, Router router);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Closes the listeners (and removes the socket file), lets in-flight requests run for up to
  // drain_timeout, then shuts every connection down and joins every thread. Idempotent; safe
  // from any thread except a handler's.
  void stop();

  // The bound TCP port (0 without a TCP listener).
  uint16_t tcp_port() const { return tcp_port_; }
  const std::string& unix_path() const { return options_.unix_path; }
  HttpServerStats stats() const;

 private:
  struct Connection;

  HttpServer(HttpServerOptions options, Router router, EventFd wake, EventFd stop_event);
  void accept_loop();
  void accept_from(int listen_fd, Transport transport);
  void refuse_busy(int fd);
  void reap_finished();
  void connection_done(Connection* c);

  HttpServerOptions options_;
  Router router_;
  std::optional<UnixListener> unix_listener_;
  UniqueFd tcp_listener_;
  uint16_t tcp_port_ = 0;
  bool out_of_fds_ = false;  // acceptor thread only
  EventFd wake_;             // acceptor: stop, or a connection finished
  EventFd stop_event_;       // connections: stop waiting for the next request
  std::atomic<bool> stopping_{false};
  std::atomic<bool> aborting_{false};
  BodyBudget body_budget_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> rejected_{0};
  ServerContext context_;
  std::thread acceptor_;
  std::once_flag stop_once_;

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;  // signalled whenever a connection finishes
  std::list<std::unique_ptr<Connection>> connections_;
  uint64_t accepted_ = 0;
  uint64_t refused_busy_ = 0;
};

}  // namespace carapace::http
