// Socket files, stop() with requests in flight, and file descriptor hygiene.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/http/http_client.h"
#include "common/http/json_util.h"
#include "common/http/response_writer.h"
#include "tests/unit/api/http_test_routes.h"
#include "tests/unit/api/http_test_util.h"

namespace carapace::http {
namespace {

using namespace std::chrono_literals;
using test::RawConn;
using test::TempDir;

Router status_router() {
  Router r;
  test::add_ok_status_route(r);
  return r;
}

TEST(HttpLifecycle, SocketIsOwnerOnlyAndRemovedOnStop) {
  TempDir dir;
  auto s = HttpServer::start(test::fast_options(dir.file("a.sock")), status_router());
  ASSERT_TRUE(s.ok()) << s.error().describe();
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("a.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  (*s)->stop();
  EXPECT_NE(::stat(dir.file("a.sock").c_str(), &st), 0);
  EXPECT_EQ(test::get_status(dir.file("a.sock"), "/status"), -1);
}

TEST(HttpLifecycle, StaleSocketIsReplacedLiveOneIsNot) {
  TempDir dir;
  std::string path = dir.file("a.sock");
  {
    // A crashed server's leftover: bound, never listening, closed.
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  auto a = HttpServer::start(test::fast_options(path), status_router());
  ASSERT_TRUE(a.ok()) << a.error().describe();
  auto b = HttpServer::start(test::fast_options(path), status_router());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("in use"), std::string::npos);
  EXPECT_EQ(test::get_status(path, "/status"), 200);
}

TEST(HttpLifecycle, OtherFilesAreNeverRemoved) {
  TempDir dir;
  std::string path = dir.file("precious");
  std::ofstream(path) << "data";
  auto s = HttpServer::start(test::fast_options(path), status_router());
  ASSERT_FALSE(s.ok());
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "data");
}

TEST(HttpLifecycle, StartNeedsAListener) {
  HttpServerOptions o;
  EXPECT_FALSE(HttpServer::start(o, status_router()).ok());
  o.unix_path = std::string(200, 'x');
  EXPECT_FALSE(HttpServer::start(o, status_router()).ok());
}

TEST(HttpLifecycle, StopLetsInFlightRequestsFinish) {
  std::atomic<int> entered{0};
  Router r;
  ASSERT_TRUE(r.add("POST", "/snapshot", [&](const HttpRequest&) {
                 ++entered;
                 std::this_thread::sleep_for(300ms);
                 return json_response(200, {{"snapshot", "done"}});
               }).ok());
  TempDir dir;
  std::string path = dir.file("a.sock");
  auto s = HttpServer::start(test::fast_options(path), std::move(r));
  ASSERT_TRUE(s.ok());
  std::vector<int> statuses(3, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      auto resp = http_request(path, "POST", "/snapshot");
      statuses[i] = resp ? resp->status : -1;
    });
  }
  // A keep-alive connection that is idle must not hold stop() up.
  RawConn idle = RawConn::open_unix(path);
  ASSERT_TRUE(idle.send("GET /snapshot HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(idle.read_response());
  for (int i = 0; i < 200 && entered.load() < 3; ++i)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(entered.load(), 3);
  auto start = std::chrono::steady_clock::now();
  (*s)->stop();
  auto took = std::chrono::steady_clock::now() - start;
  for (auto& t : clients)
    t.join();
  for (int st : statuses)
    EXPECT_EQ(st, 200);
  EXPECT_LT(took, 1500ms) << "stop() waited for more than the in-flight requests";
  EXPECT_TRUE(idle.closed_within(1s));
}

TEST(HttpLifecycle, StopCutsEndlessStreamsAtTheDrainDeadline) {
  std::atomic<bool> handler_returned{false};
  std::atomic<bool> saw_cancel{false};
  Router r;
  ASSERT_TRUE(r.add_streaming("GET", "/follow", [&](HttpRequest&, ResponseWriter& w) {
                 (void)w.begin_stream(200);
                 while (w.write_chunk("tick\n").ok())
                   std::this_thread::sleep_for(10ms);
                 saw_cancel = w.cancelled();
                 handler_returned = true;
               }).ok());
  TempDir dir;
  HttpServerOptions o = test::fast_options(dir.file("a.sock"));
  o.drain_timeout = 200ms;
  auto s = HttpServer::start(o, std::move(r));
  ASSERT_TRUE(s.ok());
  std::atomic<int> ticks{0};
  std::thread client([&] {
    (void)http_request_stream(dir.file("a.sock"), "GET", "/follow", "", {}, [&](std::string_view) {
      ++ticks;
      return true;
    });
  });
  for (int i = 0; i < 200 && ticks.load() < 3; ++i)
    std::this_thread::sleep_for(5ms);
  auto start = std::chrono::steady_clock::now();
  (*s)->stop();
  auto took = std::chrono::steady_clock::now() - start;
  client.join();
  EXPECT_TRUE(handler_returned.load());
  EXPECT_TRUE(saw_cancel.load());
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 1500ms);
}

TEST(HttpLifecycle, ClientDisconnectIsVisibleToHandler) {
  std::atomic<bool> cancelled{false};
  Router r;
  ASSERT_TRUE(r.add_streaming("GET", "/wait", [&](HttpRequest&, ResponseWriter& w) {
                 for (int i = 0; i < 300 && !w.cancelled(); ++i)
                   std::this_thread::sleep_for(10ms);
                 cancelled = w.cancelled();
                 (void)w.send(HttpResponse{});
               }).ok());
  test::TestServer ts;
  ASSERT_TRUE(ts.start(std::move(r)));
  {
    RawConn c = RawConn::open_unix(ts.path);
    ASSERT_TRUE(c.send("GET /wait HTTP/1.1\r\n\r\n"));
    std::this_thread::sleep_for(50ms);
  }
  for (int i = 0; i < 200 && !cancelled.load(); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(cancelled.load());
}

TEST(HttpLifecycle, NoFileDescriptorLeaks) {
  int before = test::count_open_fds();
  {
    TempDir dir;
    std::string path = dir.file("a.sock");
    HttpServerOptions o = test::fast_options(path);
    o.max_connections = 8;
    o.tcp_port = 0;
    auto s = HttpServer::start(o, status_router());
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 20; ++i)
      EXPECT_EQ(test::get_status(path, "/status"), 200);
    for (int i = 0; i < 10; ++i) {
      RawConn c = RawConn::open_unix(path);
      c.send(i % 2 ? "BAD\r\n\r\n" : "POST /status HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n");
      (void)c.read_response();
    }
    std::vector<RawConn> flood;
    for (int i = 0; i < 20; ++i)
      flood.push_back(RawConn::open_unix(path));
    for (int i = 0; i < 5; ++i)
      (void)RawConn::open_tcp((*s)->tcp_port()).read_response(1s);
    flood.clear();
    // A connection left open across stop().
    RawConn lingering = RawConn::open_unix(path);
    (*s)->stop();
  }
  EXPECT_EQ(test::count_open_fds(), before);
}

}  // namespace
}  // namespace carapace::http
