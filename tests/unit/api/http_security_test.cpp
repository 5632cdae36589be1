// docs/security.md #26: API abuse gets a 4xx (or a refusal) and the server survives. Each test
// sends its abuse over a raw socket, checks the answer, then checks that a normal request on a
// new connection still works.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <random>
#include <thread>

#include "common/http/http_client.h"
#include "common/http/json_util.h"
#include "tests/unit/api/http_test_routes.h"
#include "tests/unit/api/http_test_util.h"

namespace carapace::http {
namespace {

using namespace std::string_literals;

using namespace std::chrono_literals;
using test::RawConn;
using test::TestServer;

Router abuse_router() {
  Router r;
  test::add_ok_status_route(r);
  EXPECT_TRUE(r.add("POST", "/echo", [](const HttpRequest& req) {
                 return HttpResponse{200, {}, req.body};
               }).ok());
  test::add_upload_route(r, 8 << 20);
  EXPECT_TRUE(r.add("POST", "/snapshot", [](const HttpRequest& req) {
                 auto j = parse_json_object(req.body, {"path", "compress"});
                 if (!j) return error_response(j.error());
                 return json_response(200, *j);
               }).ok());
  return r;
}

class HttpSecurity : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(ts_.start(abuse_router(), options())); }
  void TearDown() override {
    // The server survived: it still answers a normal request on a fresh connection.
    EXPECT_EQ(test::get_status(ts_.path, "/status"), 200);
  }
  virtual HttpServerOptions options() { return test::fast_options(""); }

  // Sends `bytes` on a new connection; returns the status of the answer (0: none) and whether
  // the server then closed the connection.
  std::pair<int, bool> exchange(std::string_view bytes) {
    RawConn c = RawConn::open_unix(ts_.path);
    EXPECT_TRUE(c.valid());
    c.send(bytes);  // may fail once the server has answered and closed
    auto r = c.read_response();
    bool closed = c.closed_within(3s);
    return {r ? r->status : 0, closed};
  }

  TestServer ts_;
};

TEST_F(HttpSecurity, OversizedContentLengthIs413WithoutReadingTheBody) {
  // No body byte is ever sent: the answer can only come from the declared length.
  auto [status, closed] = exchange("POST /echo HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n");
  EXPECT_EQ(status, 413);
  EXPECT_TRUE(closed);
  EXPECT_EQ(exchange("PUT /upload HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n").first, 413);
}

TEST_F(HttpSecurity, OversizedChunkedBodyIs413) {
  // 1 MiB limit: the chunk that would pass it is refused by its declared size.
  std::string req = "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  req += "80000\r\n" + std::string(0x80000, 'a') + "\r\n";
  req += "80001\r\n";
  auto [status, closed] = exchange(req);
  EXPECT_EQ(status, 413);
  EXPECT_TRUE(closed);
  EXPECT_EQ(exchange("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "ffffffffffffffffffff\r\n")
                .first,
            413);
}

TEST_F(HttpSecurity, OversizedHeadIs431Or414) {
  std::string big_header = "GET /status HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n";
  EXPECT_EQ(exchange(big_header), std::make_pair(431, true));
  std::string many = "GET /status HTTP/1.1\r\n";
  for (int i = 0; i < 150; ++i)
    many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(exchange(many + "\r\n").first, 431);
  std::string long_line = "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n";
  EXPECT_EQ(exchange(long_line).first, 414);
  // A head that never ends grows nothing past the cap: refused as soon as the cap is reached.
  RawConn c = RawConn::open_unix(ts_.path);
  c.send("GET /status HTTP/1.1\r\n");
  for (int i = 0; i < 100 && c.send("X-Filler: " + std::string(1000, 'b') + "\r\n"); ++i) {
  }
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
}

TEST_F(HttpSecurity, MalformedRequestsAre400) {
  for (std::string bad : std::vector<std::string>{
           "GARBAGE\r\n\r\n", "GET /status\r\n\r\n", "GET /status HTTP/2.0\r\n\r\n",
           "GET /status HTTP/1.1 \r\n\r\n", "GET status HTTP/1.1\r\n\r\n",
           "GET /status HTTP/1.1\r\nNo colon here\r\n\r\n",
           "GET /status HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
           "POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: "
           "chunked\r\n\r\n",
           "POST /echo HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
           "POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
           "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
           "GET /status HTTP/1.1\r\nX: a\0b\r\n\r\n"s}) {
    auto [status, closed] = exchange(bad);
    EXPECT_EQ(status, 400) << bad;
    EXPECT_TRUE(closed) << bad;
  }
}

TEST_F(HttpSecurity, BareLfIsRefusedAtOnce) {
  // Not left to the header timeout: a client speaking LF-only HTTP gets its 400 immediately.
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(exchange("GET /status HTTP/1.1\nHost: x\n\n").first, 400);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms);
}

TEST_F(HttpSecurity, UnknownMethodIs501AndWrongMethodIs405) {
  EXPECT_EQ(exchange("BREW /status HTTP/1.1\r\n\r\n").first, 501);
  RawConn c = RawConn::open_unix(ts_.path);
  c.send("PUT /status HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->headers.get("Allow"), "GET");
}

TEST_F(HttpSecurity, SlowHeadGets408AndClose) {
  RawConn c = RawConn::open_unix(ts_.path);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.send("GET /status HTTP/1.1\r\n"));
  // Trickle one header byte every 50 ms: each byte is progress, but the head deadline is fixed.
  std::optional<HttpResponse> r;
  for (int i = 0; i < 40; ++i) {
    if (!c.send("X")) break;
    std::this_thread::sleep_for(50ms);
  }
  r = c.read_response(2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  EXPECT_TRUE(c.closed_within(2s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST_F(HttpSecurity, SlowBodyGets408AndClose) {
  RawConn c = RawConn::open_unix(ts_.path);
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"));
  for (int i = 0; i < 40; ++i) {
    if (!c.send("x")) break;
    std::this_thread::sleep_for(50ms);
  }
  auto r = c.read_response(2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  EXPECT_TRUE(c.closed_within(2s));
}

TEST_F(HttpSecurity, SilentConnectionIsClosed) {
  RawConn c = RawConn::open_unix(ts_.path);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.closed_within(3s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST_F(HttpSecurity, MalformedJsonIs400WithMessage) {
  auto r = http_request(ts_.path, "POST", "/snapshot", "{\"path\": ");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], "bad_request");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("malformed JSON"), std::string::npos);

  r = http_request(ts_.path, "POST", "/snapshot", std::string(10000, '['));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
}

TEST_F(HttpSecurity, UnknownJsonFieldIs400NamingIt) {
  auto r = http_request(ts_.path, "POST", "/snapshot", R"({"path": "/x", "pth": "/y"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  auto msg = nlohmann::json::parse(r->body)["error"]["message"].get<std::string>();
  EXPECT_NE(msg.find("unknown field \"pth\""), std::string::npos) << msg;
  r = http_request(ts_.path, "POST", "/snapshot", R"({"path": "/x"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpSecurity, RandomGarbageNeverKillsTheServer) {
  std::mt19937 rng(26);
  const std::string alphabet =
      "GETPOST /HTTP1.0\r\n:;-chunkedContent-Length0123456789abcdef\x00\xff"s;
  for (int i = 0; i < 150; ++i) {
    std::string junk;
    int len = static_cast<int>(rng() % 300);
    for (int k = 0; k < len; ++k)
      junk.push_back(alphabet[rng() % alphabet.size()]);
    if (rng() % 2) junk = "POST /echo HTTP/1.1\r\n" + junk;
    RawConn c = RawConn::open_unix(ts_.path);
    c.send(junk + "\r\n\r\n");
    ::shutdown(c.fd(), SHUT_WR);
    auto r = c.read_response(2s);
    if (r) {
      EXPECT_TRUE(r->status == 200 || r->status >= 400) << r->status;
    }
  }
}

class HttpConnectionCap : public HttpSecurity {
 protected:
  HttpServerOptions options() override {
    HttpServerOptions o = test::fast_options("");
    o.max_connections = 4;
    o.limits.header_timeout = 5s;
    return o;
  }
};

TEST_F(HttpConnectionCap, ExtraConnectionsGet503WhileOpenOnesWork) {
  std::vector<RawConn> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(RawConn::open_unix(ts_.path));
    ASSERT_TRUE(open.back().send("GET /status HTTP/1.1\r\n\r\n"));
    auto r = open.back().read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  for (int i = 0; i < 3; ++i) {
    RawConn extra = RawConn::open_unix(ts_.path);
    auto r = extra.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(r->headers.get("Retry-After"), "1");
    EXPECT_TRUE(extra.closed_within(2s));
  }
  EXPECT_EQ(ts_.server->stats().refused_busy, 3u);
  // The open connections still work.
  for (auto& c : open) {
    ASSERT_TRUE(c.send("GET /status HTTP/1.1\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // Closing one frees its slot (TearDown's request needs it).
  open.pop_back();
  for (int i = 0; i < 100 && ts_.server->stats().open_connections >= 4; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_LT(ts_.server->stats().open_connections, 4u);
}

class HttpBodyBudget : public HttpSecurity {
 protected:
  HttpServerOptions options() override {
    HttpServerOptions o = test::fast_options("");
    o.max_total_body_bytes = 4 << 20;
    return o;
  }
};

TEST_F(HttpBodyBudget, BodiesPastTheGlobalBudgetGet503) {
  // One slow upload holds 3 MiB of the 4 MiB budget...
  RawConn holder = RawConn::open_unix(ts_.path);
  ASSERT_TRUE(holder.send("PUT /upload HTTP/1.1\r\nContent-Length: 3145728\r\n\r\nabc"));
  std::this_thread::sleep_for(100ms);
  // ... so another 2 MiB one is refused without being read, and a small one still fits.
  EXPECT_EQ(exchange("PUT /upload HTTP/1.1\r\nContent-Length: 2097152\r\n\r\n").first, 503);
  EXPECT_EQ(http_request(ts_.path, "POST", "/echo", "small")->status, 200);
}

}  // namespace
}  // namespace carapace::http
