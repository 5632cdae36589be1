// Helpers for the HTTP tests: a temporary socket directory, a server on it, and raw client
// connections that can send anything (malformed, slow, huge) and read back what comes.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/unique_fd.h"
#include "common/http/http_server.h"
#include "common/http/http_types.h"
#include "common/http/socket_io.h"

namespace carapace::http::test {

// A fresh directory under /tmp, removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Open file descriptors of this process.
int count_open_fds();

// Limits small enough that timeout tests run in well under a second.
HttpServerOptions fast_options(const std::string& socket_path);

// A server on a temporary socket; stops in the destructor.
struct TestServer {
  TempDir dir;
  std::unique_ptr<HttpServer> server;
  std::string path;

  // Starts on dir/api.sock; the test fails (fatally in the caller via ASSERT on ok()) if not.
  bool start(Router router, std::optional<HttpServerOptions> options = std::nullopt);
};

// A client socket for raw bytes.
class RawConn {
 public:
  static RawConn open_unix(const std::string& path);
  static RawConn open_tcp(uint16_t port);

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // Sends all bytes; false when the server closed or reset the connection.
  bool send(std::string_view bytes);
  // Reads one response (head and body per its framing for `method`); nullopt on
  // EOF/timeout/garbage.
  std::optional<HttpResponse> read_response(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
      std::string_view method = "GET");
  // Whether the server closes the connection (EOF or reset) within `timeout`; discards data.
  bool closed_within(std::chrono::milliseconds timeout);

 private:
  explicit RawConn(UniqueFd fd) : fd_(std::move(fd)), reader_(fd_.get()) {}
  UniqueFd fd_;
  SocketReader reader_;
};

// Status of a one-shot GET through the library client; -1 when the request failed.
int get_status(const std::string& path, std::string_view target);

}  // namespace carapace::http::test
