// A minimal HTTP/1.1 client for tests and the CLI (`carapace` talking to a VM's --api-sock or to
// the daemon). It speaks to one server it trusts more than a stranger, but still caps what it
// buffers and how long it waits, so a wedged server cannot hang or bloat the CLI.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "common/http/http_types.h"
#include "common/http/socket_io.h"

namespace carapace::http {

struct ClientOptions {
  // Connecting, and each wait for response bytes (not the whole response: a stream may run for
  // minutes as long as bytes keep coming).
  std::chrono::milliseconds timeout{30'000};
  uint64_t max_body_bytes = 256ull << 20;  // buffered responses only
  size_t max_head_bytes = 64 * 1024;
  // False: the socket path's last component must be the socket, never a symbolic link
  // (common/base/unix_socket_path.h); for sockets in a folder a sandbox can write.
  bool follow_socket_link = true;
};

struct ClientRequest {
  std::string method = "GET";
  std::string target = "/";  // path and query, already percent-encoded
  HttpHeaders headers;
  std::string body;
  // Send the body with chunked framing (in pieces of chunk_size) instead of Content-Length.
  bool chunked = false;
  size_t chunk_size = 64 * 1024;
};

// Receives each piece of a response body as it arrives; false stops reading (and the
// connection is dropped).
using BodyCallback = std::function<bool(std::string_view piece)>;

// One client connection; requests on it run one after another (keep-alive).
class HttpClient {
 public:
  static Result<HttpClient> connect_unix(const std::string& path, ClientOptions options = {});
  static Result<HttpClient> connect_tcp(uint16_t port, ClientOptions options = {});

  // Sends `req` and reads the response. With on_body, a 2xx response's body goes to it piece by
  // piece (the returned body stays empty); any other status is buffered as usual, so an error
  // document arrives whole with its status. After an error the connection is unusable.
  Result<HttpResponse> request(const ClientRequest& req, const BodyCallback& on_body = nullptr);

  // Whether the last response left the connection open for another request.
  bool reusable() const { return reusable_; }
  int fd() const { return fd_.get(); }

 private:
  HttpClient(UniqueFd fd, ClientOptions options);

  UniqueFd fd_;
  ClientOptions options_;
  SocketReader reader_;
  bool reusable_ = true;
};

// One request on a fresh connection to a Unix socket, closed afterwards.
Result<HttpResponse> http_request(const std::string& unix_path, std::string_view method,
                                  std::string_view target, std::string_view body = {},
                                  const HttpHeaders& headers = {},
                                  const ClientOptions& options = {});
// The same, streaming the body to `on_body` (exec output, SSE).
Result<HttpResponse> http_request_stream(const std::string& unix_path, std::string_view method,
                                         std::string_view target, std::string_view body,
                                         const HttpHeaders& headers, const BodyCallback& on_body,
                                         const ClientOptions& options = {});

}  // namespace carapace::http
