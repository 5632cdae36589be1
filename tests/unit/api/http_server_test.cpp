// The server end to end: routing, keep-alive, request bodies, handler failures, TCP mode.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/http/auth.h"
#include "common/http/http_client.h"
#include "common/http/json_util.h"
#include "common/http/response_writer.h"
#include "tests/unit/api/http_test_routes.h"
#include "tests/unit/api/http_test_util.h"

namespace carapace::http {
namespace {

using namespace std::chrono_literals;
using test::RawConn;
using test::TestServer;

ClientRequest make_request(std::string method, std::string target, std::string body = "") {
  ClientRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.body = std::move(body);
  return r;
}

Router api_router() {
  Router r;
  EXPECT_TRUE(r.add("GET", "/status", [](const HttpRequest&) {
                 return json_response(200, {{"state", "running"}});
               }).ok());
  EXPECT_TRUE(r.add("GET", "/sandboxes/{id}/files", [](const HttpRequest& req) {
                 auto path = req.query.get("path");
                 return json_response(
                     200, {{"id", req.param("id")}, {"path", path ? std::string(*path) : ""}});
               }).ok());
  EXPECT_TRUE(r.add("POST", "/echo", [](const HttpRequest& req) {
                 HttpResponse resp;
                 resp.headers.set("Content-Type", "application/octet-stream");
                 resp.body = req.body;
                 return resp;
               }).ok());
  test::add_upload_route(r, 4 << 20);
  test::add_five_line_stream_route(r);
  EXPECT_TRUE(r.add("POST", "/config", [](const HttpRequest& req) {
                 auto j = parse_json_object(req.body, {"vcpus", "memory_mib"});
                 if (!j) return error_response(j.error());
                 return json_response(200, *j);
               }).ok());
  EXPECT_TRUE(r.add("GET", "/throw", [](const HttpRequest&) -> HttpResponse {
                 throw std::runtime_error("boom");
               }).ok());
  EXPECT_TRUE(r.add_streaming("GET", "/silent", [](HttpRequest&, ResponseWriter&) {}).ok());
  EXPECT_TRUE(r.add_streaming("GET", "/cut", [](HttpRequest&, ResponseWriter& w) {
                 if (!w.begin_stream(200, {{"Content-Type", "text/plain"}})) return;
                 if (!w.write_chunk("first part\n")) return;
                 w.abort_stream();  // its source failed half-way
               }).ok());
  EXPECT_TRUE(r.add("GET", "/bad-header", [](const HttpRequest&) {
                 HttpResponse resp;
                 resp.headers.set("X-Evil", "a\r\nSet-Cookie: x=1");
                 return resp;
               }).ok());
  return r;
}

TEST(HttpServer, RoutesParamsAndQuery) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  auto r = http_request(ts.path, "GET", "/status");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers.get("Content-Type"), "application/json");
  EXPECT_TRUE(r->headers.has("Date"));
  EXPECT_EQ(nlohmann::json::parse(r->body)["state"], "running");

  r = http_request(ts.path, "GET", "/sandboxes/sb%2D7/files?path=" + percent_encode("/a b/ü"));
  ASSERT_TRUE(r.ok());
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["id"], "sb-7");
  EXPECT_EQ(j["path"], "/a b/ü");

  r = http_request(ts.path, "GET", "/nope");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "not_found");

  r = http_request(ts.path, "DELETE", "/status");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->headers.get("Allow"), "GET");

  r = http_request(ts.path, "GET", "/sandboxes/x/files?path=%00");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  r = http_request(ts.path, "GET", "/sandboxes/..%2f/files");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
}

TEST(HttpServer, KeepAliveReusesOneConnection) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  auto c = HttpClient::connect_unix(ts.path);
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 5; ++i) {
    ClientRequest req;
    req.method = "POST";
    req.target = "/echo";
    req.body = "ping " + std::to_string(i);
    auto r = c->request(req);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->body, req.body);
    EXPECT_TRUE(c->reusable());
  }
  // 404 and 405 without a body keep the connection too.
  auto r = c->request(make_request("GET", "/missing"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(c->reusable());
  EXPECT_EQ(ts.server->stats().accepted, 1u);

  ClientRequest close_req = make_request("GET", "/status");
  close_req.headers.set("Connection", "close");
  r = c->request(close_req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->headers.get("Connection"), "close");
  EXPECT_FALSE(c->reusable());
}

TEST(HttpServer, Http10ClosesUnlessKeepAlive) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  RawConn c = RawConn::open_unix(ts.path);
  ASSERT_TRUE(c.send("GET /status HTTP/1.0\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(c.closed_within(2s));

  RawConn k = RawConn::open_unix(ts.path);
  ASSERT_TRUE(k.send("GET /status HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  r = k.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->headers.get("Connection"), "keep-alive");
  ASSERT_TRUE(k.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  // No chunked coding in HTTP/1.0: the stream ends with the connection.
  r = k.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "line 0\nline 1\nline 2\nline 3\nline 4\n");
  EXPECT_FALSE(r->headers.has("Transfer-Encoding"));
}

TEST(HttpServer, ChunkedRequestBodies) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  auto c = HttpClient::connect_unix(ts.path);
  ASSERT_TRUE(c.ok());
  std::string data;
  for (int i = 0; i < 300000; ++i)
    data.push_back(static_cast<char>('a' + i % 26));
  ClientRequest req = make_request("POST", "/echo", data);
  req.chunked = true;
  req.chunk_size = 7777;
  auto r = c->request(req);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, data);

  // Pipelined right behind the last chunk: the bytes after the body are the next request.
  RawConn raw = RawConn::open_unix(ts.path);
  ASSERT_TRUE(
      raw.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
               "3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n"
               "GET /status HTTP/1.1\r\n\r\n"));
  auto a = raw.read_response();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->body, "abcde");
  auto b = raw.read_response();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 200);
}

TEST(HttpServer, PerRouteBodyLimit) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  std::string three_mib(3 << 20, 'x');
  auto r = http_request(ts.path, "PUT", "/upload", three_mib);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(nlohmann::json::parse(r->body)["bytes"], 3 << 20);
  // The default 1 MiB applies elsewhere.
  r = http_request(ts.path, "POST", "/echo", std::string(2 << 20, 'x'));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 413);
}

TEST(HttpServer, HeadSendsNoBody) {
  Router r;
  ASSERT_TRUE(r.add("HEAD", "/file", [](const HttpRequest&) {
                 return HttpResponse{200, {}, "0123456789"};
               }).ok());
  TestServer ts;
  ASSERT_TRUE(ts.start(std::move(r)));
  RawConn c = RawConn::open_unix(ts.path);
  ASSERT_TRUE(c.send("HEAD /file HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n"));
  auto head = c.read_response(5s, "HEAD");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers.get("Content-Length"), "10");
  // Had body bytes followed the head, they would be read here instead of the 404.
  auto next = c.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 404);
}

TEST(HttpServer, ExpectContinue) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  RawConn c = RawConn::open_unix(ts.path);
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto cont = c.read_response();
  ASSERT_TRUE(cont);
  EXPECT_EQ(cont->status, 100);
  ASSERT_TRUE(c.send("hello"));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");

  RawConn d = RawConn::open_unix(ts.path);
  ASSERT_TRUE(d.send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: teapot\r\n\r\n"));
  r = d.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 417);
}

TEST(HttpServer, HandlerFailuresBecome500) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  for (const char* target : {"/throw", "/silent", "/bad-header"}) {
    auto r = http_request(ts.path, "GET", target);
    ASSERT_TRUE(r.ok()) << target;
    EXPECT_EQ(r->status, 500) << target;
    EXPECT_FALSE(r->headers.has("Set-Cookie"));
  }
  EXPECT_EQ(test::get_status(ts.path, "/status"), 200);
}

// A stream whose source fails after the 200 went out must not look complete: no final chunk,
// the connection is closed, and the client reports the body as cut short.
TEST(HttpServer, AbortedStreamIsSeenAsTruncated) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  std::string got;
  auto r = http_request_stream(ts.path, "GET", "/cut", {}, {}, [&](std::string_view piece) {
    got.append(piece);
    return true;
  });
  EXPECT_FALSE(r.ok()) << "a cut stream read as a complete response";
  EXPECT_EQ(got, "first part\n");
  EXPECT_EQ(test::get_status(ts.path, "/status"), 200);
}

TEST(HttpServer, SlowHandlerDoesNotBlockOthers) {
  std::atomic<bool> release{false};
  Router r;
  ASSERT_TRUE(r.add("GET", "/slow", [&](const HttpRequest&) {
                 for (int i = 0; i < 500 && !release.load(); ++i)
                   std::this_thread::sleep_for(10ms);
                 return HttpResponse{200, {}, "slow"};
               }).ok());
  ASSERT_TRUE(r.add("GET", "/fast", [](const HttpRequest&) {
                 return HttpResponse{200, {}, "fast"};
               }).ok());
  TestServer ts;
  ASSERT_TRUE(ts.start(std::move(r)));
  std::thread slow([&] { EXPECT_EQ(test::get_status(ts.path, "/slow"), 200); });
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(test::get_status(ts.path, "/fast"), 200);
  EXPECT_FALSE(release.load());
  release = true;
  slow.join();
}

TEST(HttpServer, ManyConcurrentClients) {
  TestServer ts;
  ASSERT_TRUE(ts.start(api_router()));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      auto c = HttpClient::connect_unix(ts.path);
      if (!c) return;
      for (int i = 0; i < 25; ++i) {
        auto r = c->request(make_request("GET", "/status"));
        if (r && r->status == 200) ++ok;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(ok.load(), 16 * 25);
}

TEST(HttpServer, TcpListenerWithBearerToken) {
  const std::string token = "tok-0123456789abcdef";
  std::atomic<int> handled{0};
  Router r;
  ASSERT_TRUE(r.add("POST", "/echo", [&](const HttpRequest& req) {
                 ++handled;
                 return HttpResponse{200, {}, req.body};
               }).ok());
  test::TempDir dir;
  HttpServerOptions o = test::fast_options(dir.file("api.sock"));
  o.tcp_port = 0;
  o.admit = [&](const HttpRequest& head) -> std::optional<HttpResponse> {
    if (head.transport == Transport::kTcp && !bearer_token_matches(head.headers, token))
      return error_response(401, "missing or wrong bearer token");
    return std::nullopt;
  };
  auto s = HttpServer::start(o, std::move(r));
  ASSERT_TRUE(s.ok()) << s.error().describe();
  uint16_t port = (*s)->tcp_port();
  ASSERT_NE(port, 0);

  // Refused before the body is read: the client declares 100 MB and sends none of it.
  RawConn c = RawConn::open_tcp(port);
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n"));
  auto resp = c.read_response();
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->status, 401);
  EXPECT_EQ(handled.load(), 0);

  auto client = HttpClient::connect_tcp(port);
  ASSERT_TRUE(client.ok());
  ClientRequest req = make_request("POST", "/echo", "hi");
  req.headers.set("Host", "localhost:" + std::to_string(port));
  req.headers.set("Authorization", "Bearer " + token);
  auto ok = client->request(req);
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "hi");

  // DNS rebinding: a page on evil.example reaching 127.0.0.1 sends its own Host.
  RawConn rebind = RawConn::open_tcp(port);
  ASSERT_TRUE(rebind.send("POST /echo HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer " +
                          token + "\r\nContent-Length: 0\r\n\r\n"));
  resp = rebind.read_response();
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->status, 421);
  EXPECT_EQ(handled.load(), 1);

  // The Unix socket needs no token.
  EXPECT_EQ(http_request(dir.file("api.sock"), "POST", "/echo", "x")->status, 200);
}

}  // namespace
}  // namespace carapace::http
