#include "common/http/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <thread>

#include "common/base/unix_socket_path.h"
#include "common/http/body_reader.h"
#include "common/http/chunked.h"
#include "common/http/message_parser.h"

namespace carapace::http {
namespace {

constexpr size_t kMaxResponseHeaders = 200;

// Waits for a non-blocking connect() to finish.
Status finish_connect(int fd, std::chrono::milliseconds timeout, const std::string& what) {
  if (!TRY(wait_writable(fd, timeout))) return make_error("connect " + what + ": timed out");
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return sys_error("getsockopt");
  if (err != 0) return sys_error("connect " + what, err);
  return ok_status();
}

bool safe_header(std::string_view name, std::string_view value) {
  return is_token(name) && value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

}  // namespace

HttpClient::HttpClient(UniqueFd fd, ClientOptions options)
    : fd_(std::move(fd)), options_(options), reader_(fd_.get()) {}

Result<HttpClient> HttpClient::connect_unix(const std::string& path, ClientOptions options) {
  UnixSocketTarget target = TRY(unix_socket_target(path, options.follow_socket_link));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("socket");
  // A Unix connect() either completes or fails at once, except EAGAIN when the server's backlog
  // is full: retry that until the timeout.
  auto deadline = Clock::now() + options.timeout;
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&target.addr), target.len) < 0) {
    if (errno == EINTR) continue;
    if (errno != EAGAIN || Clock::now() >= deadline) return sys_error("connect " + path);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return HttpClient(std::move(fd), options);
}

Result<HttpClient> HttpClient::connect_tcp(uint16_t port, ClientOptions options) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string what = "127.0.0.1:" + std::to_string(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
    if (errno != EINPROGRESS) return sys_error("connect " + what);
    TRY_STATUS(finish_connect(fd.get(), options.timeout, what));
  }
  return HttpClient(std::move(fd), options);
}

Result<HttpResponse> HttpClient::request(const ClientRequest& req, const BodyCallback& on_body) {
  if (!fd_.valid() || !reusable_) return make_error("http client: connection is closed");
  if (!is_token(req.method) || req.target.empty() || req.target[0] != '/' ||
      req.target.find_first_of(" \r\n") != std::string::npos)
    return as_invalid_input(make_error("http client: invalid method or target"));
  reusable_ = false;  // until a complete response says otherwise

  std::string head = req.method + " " + req.target + " HTTP/1.1\r\n";
  if (!req.headers.has("Host")) head += "Host: localhost\r\n";
  for (const auto& [name, value] : req.headers.fields()) {
    if (!safe_header(name, value))
      return as_invalid_input(make_error("http client: malformed header " + name));
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding")) continue;
    head += name + ": " + value + "\r\n";
  }
  bool body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  if (req.chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else if (!req.body.empty() || body_method) {
    head += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
  }
  head += "\r\n";

  Status sent = send_all(fd_.get(), head, options_.timeout);
  if (sent && !req.chunked) sent = send_all(fd_.get(), req.body, options_.timeout);
  for (size_t off = 0; sent && req.chunked && off < req.body.size(); off += req.chunk_size) {
    sent = send_all(fd_.get(), encode_chunk(std::string_view(req.body).substr(off, req.chunk_size)),
                    options_.timeout);
  }
  if (sent && req.chunked) sent = send_all(fd_.get(), kLastChunk, options_.timeout);
  // A server may answer (413, 401) and close before taking the whole body: its response is
  // still the best account of what happened, so read it if it is there.

  HttpResponse resp;
  StatusLine status;
  for (;;) {
    reader_.set_deadline(Clock::now() + options_.timeout);
    std::string text;
    IoStatus st = reader_.read_head(text, options_.max_head_bytes);
    if (st != IoStatus::kOk) {
      if (!sent) return sent.take_error();
      return make_error(st == IoStatus::kTimeout ? "http client: response timed out"
                                                 : "http client: no valid response head");
    }
    resp.headers = HttpHeaders();
    status = TRY(parse_response_head(text, kMaxResponseHeaders, resp.headers));
    if (status.status >= 200) break;
    if (status.status == 101) return make_error("http client: unexpected protocol switch");
  }
  resp.status = status.status;

  BodyFraming framing = TRY(response_framing(req.method, resp.status, resp.headers));
  DeadlineFn deadline = [this](uint64_t) { return Clock::now() + options_.timeout; };
  // Only a success streams: an error's body is a small JSON document the caller wants whole,
  // together with the status.
  bool stream = on_body && resp.status >= 200 && resp.status < 300;
  uint64_t max = stream ? std::numeric_limits<uint64_t>::max() : options_.max_body_bytes;
  SinkFn sink = [&](std::string_view piece) {
    if (stream) return on_body(piece);
    resp.body.append(piece);
    return true;
  };
  switch (read_body(reader_, framing, max, deadline, sink)) {
    case BodyStatus::kOk:
      break;
    case BodyStatus::kStopped:
      return resp;  // the caller had enough; the connection is spent
    case BodyStatus::kTooLarge:
      return make_error("http client: response body too large");
    case BodyStatus::kTimeout:
      return make_error("http client: response body timed out");
    case BodyStatus::kMalformed:
      return make_error("http client: malformed chunked response");
    default:
      return make_error("http client: connection closed inside the response body");
  }
  bool close = resp.headers.has_token("Connection", "close") ||
               (status.minor_version == 0 && !resp.headers.has_token("Connection", "keep-alive"));
  reusable_ = sent.ok() && !close && framing.kind != BodyFraming::kUntilClose;
  return resp;
}

namespace {

Result<HttpResponse> one_shot(const std::string& unix_path, std::string_view method,
                              std::string_view target, std::string_view body,
                              const HttpHeaders& headers, const BodyCallback& on_body,
                              const ClientOptions& options) {
  HttpClient client = TRY(HttpClient::connect_unix(unix_path, options));
  ClientRequest req;
  req.method = std::string(method);
  req.target = std::string(target);
  req.headers = headers;
  if (!req.headers.has("Connection")) req.headers.set("Connection", "close");
  req.body = std::string(body);
  return client.request(req, on_body);
}

}  // namespace

Result<HttpResponse> http_request(const std::string& unix_path, std::string_view method,
                                  std::string_view target, std::string_view body,
                                  const HttpHeaders& headers, const ClientOptions& options) {
  return one_shot(unix_path, method, target, body, headers, nullptr, options);
}

Result<HttpResponse> http_request_stream(const std::string& unix_path, std::string_view method,
                                         std::string_view target, std::string_view body,
                                         const HttpHeaders& headers, const BodyCallback& on_body,
                                         const ClientOptions& options) {
  return one_shot(unix_path, method, target, body, headers, on_body, options);
}

}  // namespace carapace::http
