// Streaming responses: chunked writes that reach the client as they happen, SSE, and streams
// that end badly.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/http/http_client.h"
#include "common/http/json_util.h"
#include "common/http/response_writer.h"
#include "tests/unit/api/http_test_routes.h"
#include "tests/unit/api/http_test_util.h"

namespace carapace::http {
namespace {

using namespace std::chrono_literals;
using test::TestServer;

Router stream_router() {
  Router r;
  test::add_five_line_stream_route(r);
  EXPECT_TRUE(r.add_streaming("GET", "/events", [](HttpRequest&, ResponseWriter& w) {
                 SseStream sse(w);
                 if (!sse.open()) return;
                 (void)sse.send("hello", "stdout", "1");
                 (void)sse.comment("keepalive");
                 (void)sse.send("two\nlines", "stderr", "2");
                 (void)sse.send("{\"exit_code\":0}", "exit");
                 (void)sse.close();
               }).ok());
  EXPECT_TRUE(r.add("GET", "/sandboxes/{id}/exec", [](const HttpRequest&) {
                 return error_response(404, "no such sandbox");
               }).ok());
  return r;
}

TEST(HttpStream, StreamsChunkedResponses) {
  TestServer ts;
  ASSERT_TRUE(ts.start(stream_router()));
  std::vector<std::string> pieces;
  auto r = http_request_stream(ts.path, "GET", "/stream", "", {}, [&](std::string_view p) {
    pieces.emplace_back(p);
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->headers.get("Transfer-Encoding"), "chunked");
  std::string all;
  for (auto& p : pieces)
    all += p;
  EXPECT_EQ(all, "line 0\nline 1\nline 2\nline 3\nline 4\n");
  EXPECT_TRUE(r->body.empty());
}

TEST(HttpStream, StreamedChunksArriveBeforeTheHandlerEnds) {
  // The handler writes one chunk, then waits until the client has seen it: this only finishes
  // if chunks are written through, not buffered to the end.
  std::mutex mu;
  std::condition_variable cv;
  bool client_saw_first = false;
  Router r;
  ASSERT_TRUE(r.add_streaming("GET", "/exec", [&](HttpRequest&, ResponseWriter& w) {
                 ASSERT_TRUE(w.begin_stream(200).ok());
                 ASSERT_TRUE(w.write_chunk("first").ok());
                 std::unique_lock lock(mu);
                 bool seen = cv.wait_for(lock, 5s, [&] { return client_saw_first; });
                 lock.unlock();
                 (void)w.write_chunk(seen ? "second" : "timeout");
                 (void)w.finish();
               }).ok());
  TestServer ts;
  ASSERT_TRUE(ts.start(std::move(r)));
  std::string all;
  auto resp = http_request_stream(ts.path, "GET", "/exec", "", {}, [&](std::string_view p) {
    all += p;
    if (all == "first") {
      std::lock_guard lock(mu);
      client_saw_first = true;
      cv.notify_all();
    }
    return true;
  });
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(all, "firstsecond");
}

TEST(HttpStream, ServerSentEvents) {
  TestServer ts;
  ASSERT_TRUE(ts.start(stream_router()));
  auto r = http_request(ts.path, "GET", "/events");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->headers.get("Content-Type"), "text/event-stream; charset=utf-8");
  EXPECT_EQ(r->headers.get("Cache-Control"), "no-store");
  EXPECT_EQ(r->body,
            "event: stdout\nid: 1\ndata: hello\n\n"
            ":keepalive\n\n"
            "event: stderr\nid: 2\ndata: two\ndata: lines\n\n"
            "event: exit\ndata: {\"exit_code\":0}\n\n");
}

TEST(HttpStream, HandlerThrowingMidStreamCutsTheConnection) {
  Router r;
  ASSERT_TRUE(r.add_streaming("GET", "/s", [](HttpRequest&, ResponseWriter& w) {
                 (void)w.begin_stream(200);
                 (void)w.write_chunk("partial");
                 throw std::runtime_error("lost the guest");
               }).ok());
  TestServer ts;
  ASSERT_TRUE(ts.start(std::move(r)));
  auto resp = http_request(ts.path, "GET", "/s");
  EXPECT_FALSE(resp.ok()) << "a truncated stream must not look complete";
}

TEST(HttpStream, ErrorStatusIsBufferedNotStreamed) {
  TestServer ts;
  ASSERT_TRUE(ts.start(stream_router()));
  int pieces = 0;
  auto r = http_request_stream(ts.path, "GET", "/sandboxes/x/exec", "", {}, [&](std::string_view) {
    ++pieces;
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(pieces, 0);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "not_found");
}

TEST(HttpStream, ClientThatStopsReadingEndsTheHandler) {
  std::atomic<bool> handler_done{false};
  Router r;
  ASSERT_TRUE(r.add_streaming("GET", "/firehose", [&](HttpRequest&, ResponseWriter& w) {
                 (void)w.begin_stream(200);
                 std::string block(64 * 1024, 'z');
                 // Ends when the client goes away (write fails), never on its own.
                 while (w.write_chunk(block).ok()) {
                 }
                 handler_done = true;
               }).ok());
  TestServer ts;
  ASSERT_TRUE(ts.start(std::move(r)));
  size_t got = 0;
  auto resp = http_request_stream(ts.path, "GET", "/firehose", "", {}, [&](std::string_view p) {
    got += p.size();
    return got < (1 << 20);  // had enough
  });
  ASSERT_TRUE(resp.ok());
  for (int i = 0; i < 300 && !handler_done.load(); ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(handler_done.load());
  EXPECT_EQ(test::get_status(ts.path, "/missing"), 404);  // still serving
}

}  // namespace
}  // namespace carapace::http
