#include "tests/unit/api/http_test_util.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/http/body_reader.h"
#include "common/http/http_client.h"
#include "common/http/message_parser.h"

namespace carapace::http::test {

TempDir::TempDir() {
  char tmpl[] = "/tmp/carapace-http-XXXXXX";
  char* p = ::mkdtemp(tmpl);
  path_ = p ? p : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

int count_open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory's own fd
}

HttpServerOptions fast_options(const std::string& socket_path) {
  HttpServerOptions o;
  o.unix_path = socket_path;
  o.limits.header_timeout = std::chrono::milliseconds(400);
  o.limits.body_timeout = std::chrono::milliseconds(400);
  o.limits.idle_timeout = std::chrono::milliseconds(2000);
  o.limits.write_timeout = std::chrono::milliseconds(2000);
  o.drain_timeout = std::chrono::milliseconds(2000);
  return o;
}

bool TestServer::start(Router router, std::optional<HttpServerOptions> options) {
  path = dir.file("api.sock");
  HttpServerOptions o = options ? *options : fast_options(path);
  o.unix_path = path;
  auto s = HttpServer::start(std::move(o), std::move(router));
  if (!s) return false;
  server = std::move(*s);
  return true;
}

RawConn RawConn::open_unix(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) fd.reset();
  return RawConn(std::move(fd));
}

RawConn RawConn::open_tcp(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) fd.reset();
  return RawConn(std::move(fd));
}

bool RawConn::send(std::string_view bytes) {
  return send_all(fd_.get(), bytes, std::chrono::milliseconds(5000)).ok();
}

std::optional<HttpResponse> RawConn::read_response(std::chrono::milliseconds timeout,
                                                   std::string_view method) {
  reader_.set_deadline(Clock::now() + timeout);
  std::string head;
  if (reader_.read_head(head, 64 * 1024) != IoStatus::kOk) return std::nullopt;
  HttpResponse r;
  auto st = parse_response_head(head, 200, r.headers);
  if (!st) return std::nullopt;
  r.status = st->status;
  auto framing = response_framing(method, r.status, r.headers);
  if (!framing) return std::nullopt;
  auto deadline = [&](uint64_t) { return Clock::now() + timeout; };
  auto sink = [&](std::string_view piece) {
    r.body.append(piece);
    return true;
  };
  if (read_body(reader_, *framing, 1 << 30, deadline, sink) != BodyStatus::kOk) return std::nullopt;
  return r;
}

bool RawConn::closed_within(std::chrono::milliseconds timeout) {
  reader_.set_deadline(Clock::now() + timeout);
  std::string sink;
  for (;;) {
    sink.clear();
    IoStatus st = reader_.read_some(sink, 1 << 16);
    if (st == IoStatus::kClosed) return true;
    if (st != IoStatus::kOk) return false;
  }
}

int get_status(const std::string& path, std::string_view target) {
  auto r = http_request(path, "GET", target);
  return r ? r->status : -1;
}

}  // namespace carapace::http::test
