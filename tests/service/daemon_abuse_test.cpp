// docs/security.md #26 (API abuse gets a 4xx and the server survives) and 27 (calls in the wrong
// state get a 4xx and change nothing) against the daemon.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "common/base/unique_fd.h"
#include "tests/service/daemon_harness.h"

namespace carapace::testing {
namespace {

using nlohmann::json;

UniqueFd connect_raw(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return UniqueFd();
  return fd;
}

// What the server sends back on a raw connection within `ms` (until it closes).
std::string read_some(int fd, int ms) {
  std::string out;
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The body of a raw HTTP error reply (Content-Length framed), checked like call()'s.
void expect_raw_error_body(const std::string& reply, int status) {
  size_t head_end = reply.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << reply;
  expect_error_body(http::HttpResponse{status, {}, reply.substr(head_end + 4)});
}

TEST_F(DaemonTest, SecurityChecks26OversizedBodyIs413) {
  start_daemon(R"({"max_request_bytes": 4096, "max_upload_bytes": 65536,
                   "health_interval_s": 0})");
  std::string tpl = make_template(0);
  std::string id = make_sandbox(tpl)["id"];
  std::string big(8192, ' ');
  big = "{\"template\": \"" + tpl + "\"" + big + "}";
  EXPECT_EQ(call("POST", "/sandboxes", big).status, 413);
  EXPECT_EQ(call("PUT", "/sandboxes/" + id + "/files?path=big", std::string(70000, 'x')).status,
            413);
  // Uploads have their own, larger limit.
  EXPECT_EQ(call("PUT", "/sandboxes/" + id + "/files?path=ok", std::string(60000, 'x')).status,
            200);
  // A file in the sandbox larger than the limit is refused before any byte is sent (the daemon
  // streams files chunk by chunk, so it checks the size first).
  auto grow = call("POST", "/sandboxes/" + id + "/exec",
                   R"({"argv": ["sh", "-c", "head -c 70000 /dev/zero > huge"]})");
  ASSERT_EQ(grow.status, 200) << grow.body;
  auto huge = call("GET", "/sandboxes/" + id + "/files?path=huge");
  EXPECT_EQ(huge.status, 413) << huge.body;
  EXPECT_EQ(body_json(huge)["error"]["code"], "too_large");
  auto ok = call("GET", "/sandboxes/" + id + "/files?path=ok");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, std::string(60000, 'x'));
  EXPECT_EQ(call("GET", "/health").status, 200);
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 1u);
}

TEST_F(DaemonTest, SecurityChecks26MalformedJsonAndUnknownFields) {
  start_daemon();
  std::string tpl = make_template(0);
  std::string id = make_sandbox(tpl)["id"];
  const char* bodies[] = {
      "{",          "nul\x01l", "[]", "\"text\"", "{\"template\": \"a\", \"template\": \"b\"}",
      "{\"a\": 1,}"};
  for (const char* b : bodies) {
    auto r = call("POST", "/sandboxes", b);
    EXPECT_EQ(r.status, 400) << b << " -> " << r.body;
    EXPECT_EQ(body_json(r)["error"]["code"], "bad_request");
  }
  std::string deep = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(call("POST", "/templates", deep).status, 400);
  EXPECT_EQ(
      call("POST", "/sandboxes/" + id + "/exec", R"({"argv": ["true"], "sudo": true})").status,
      400);
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/pause", R"({"now": true})").status, 400);
  EXPECT_EQ(call("POST", "/templates", R"({"kernel": 1})").status, 400);
  EXPECT_EQ(call("GET", "/sandboxes/..%2Fetc").status, 400);
  EXPECT_EQ(call("PATCH", "/sandboxes").status, 405);
  EXPECT_EQ(call("BREW", "/sandboxes").status, 501);
  EXPECT_EQ(call("PUT", "/sandboxes").status, 405);
  EXPECT_EQ(call("GET", "/nothing").status, 404);
  // Still serving, and nothing changed.
  EXPECT_EQ(call("GET", "/health").status, 200);
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 1u);
  EXPECT_EQ(body_json(call("GET", "/templates"))["templates"].size(), 1u);
}

TEST_F(DaemonTest, SecurityChecks26SlowClientDoesNotBlockOthers) {
  start_daemon(R"({"header_timeout_s": 1, "health_interval_s": 0})");
  UniqueFd slow = connect_raw(socket_);
  ASSERT_TRUE(slow.valid());
  ASSERT_EQ(::write(slow.get(), "GET /hea", 8), 8);  // and then nothing
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", "/health").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  // The slow one is answered 408 and dropped after the header timeout.
  std::string reply = read_some(slow.get(), 5000);
  EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  expect_raw_error_body(reply, 408);
  EXPECT_EQ(call("GET", "/health").status, 200);
}

TEST_F(DaemonTest, SecurityChecks26TooManyConnectionsGet503) {
  start_daemon(R"({"max_connections": 4, "health_interval_s": 0})");
  std::vector<UniqueFd> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(connect_raw(socket_));
    ASSERT_TRUE(held.back().valid());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  UniqueFd extra = connect_raw(socket_);
  ASSERT_TRUE(extra.valid());
  std::string reply = read_some(extra.get(), 3000);
  EXPECT_EQ(reply.rfind("HTTP/1.1 503", 0), 0u) << reply;
  expect_raw_error_body(reply, 503);
  held.clear();
  // Once they are gone the server answers again.
  int status = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (status != 200 && std::chrono::steady_clock::now() < until) {
    auto r = http::http_request(socket_, "GET", "/health");
    status = r.ok() ? r->status : 0;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
}

// docs/security.md #27: wrong-state calls are 409 and leave the state as it was.
TEST_F(DaemonTest, SecurityChecks27WrongStateIs409AndChangesNothing) {
  start_daemon(R"({"health_interval_s": 0})");
  std::string tpl = make_template(0);
  std::string id = make_sandbox(tpl)["id"];
  auto state = [&] { return body_json(call("GET", "/sandboxes/" + id))["state"]; };

  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/resume").status, 409);  // running
  EXPECT_EQ(state(), "running");
  ASSERT_EQ(call("POST", "/sandboxes/" + id + "/pause").status, 200);
  auto again = call("POST", "/sandboxes/" + id + "/pause");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(body_json(again)["error"]["code"], "conflict");
  EXPECT_EQ(state(), "paused");
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/exec", R"({"argv": ["true"]})").status, 409);
  EXPECT_EQ(call("PUT", "/sandboxes/" + id + "/files?path=a", "x").status, 409);
  EXPECT_EQ(call("GET", "/sandboxes/" + id + "/files?path=a").status, 409);
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/fork", R"({"count": 1})").status, 409);
  EXPECT_EQ(
      call("POST", "/sandboxes/" + id + "/documents", R"({"spec": {}, "format": "pdf"})").status,
      409);
  EXPECT_EQ(state(), "paused");
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 1u);
  // A template with live sandboxes cannot go.
  EXPECT_EQ(call("DELETE", "/templates/" + tpl).status, 409);
  EXPECT_EQ(call("GET", "/templates/" + tpl).status, 200);
  ASSERT_EQ(call("POST", "/sandboxes/" + id + "/resume").status, 200);
  auto e = call("POST", "/sandboxes/" + id + "/exec", R"({"argv": ["echo", "ok"]})");
  EXPECT_EQ(body_json(e)["stdout"], "ok\n");
  EXPECT_EQ(call("DELETE", "/sandboxes/" + id).status, 204);
  EXPECT_EQ(call("DELETE", "/templates/" + tpl).status, 204);
}

}  // namespace
}  // namespace carapace::testing
