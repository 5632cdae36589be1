// How a handler answers. Either one send() of a whole response (Content-Length framing), or a
// stream: begin_stream(), any number of write_chunk()s as data becomes available, finish()
// (chunked framing on HTTP/1.1; on HTTP/1.0 the body ends when the connection closes). Nothing
// is buffered: every call is written to the socket before it returns, so an exec's output reaches
// the client as it is produced.
//
// Every write fails (and the writer stays failed) once the client is gone, stops reading for
// HttpLimits::write_timeout, or the server's stop() deadline has passed. A long-running handler
// should stop when a write fails, and poll cancelled() while it waits for something else.
#pragma once

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/http/http_types.h"

namespace carapace::http {

class ResponseWriter {
 public:
  struct Config {
    int fd = -1;
    bool head_request = false;  // HEAD: the head is sent, the body never is
    int minor_version = 1;      // of the request
    bool keep_alive = true;     // whether the server means to keep the connection
    std::chrono::milliseconds write_timeout{30'000};
    const std::atomic<bool>* aborted = nullptr;  // the server's "stop waiting" flag
  };

  explicit ResponseWriter(const Config& config);
  ResponseWriter(const ResponseWriter&) = delete;
  ResponseWriter& operator=(const ResponseWriter&) = delete;

  // The whole response. Content-Length, Transfer-Encoding and Connection are the writer's to set;
  // a handler's "Connection: close" is honoured. Status must be 200..599.
  Status send(const HttpResponse& response);

  Status begin_stream(int status, const HttpHeaders& headers = {});
  Status write_chunk(std::string_view data);
  Status finish();
  // Gives up on a started stream whose source failed: no final chunk is sent and the server
  // closes the connection, so the client sees a truncated body, never a clean end.
  void abort_stream() { failed_ = true; }

  bool started() const { return started_; }
  bool complete() const { return complete_; }
  bool failed() const { return failed_; }
  // Whether the connection may carry another request once this response is complete.
  bool keep_alive() const { return keep_alive_ && !failed_; }
  // The status sent (0 before).
  int status() const { return status_; }

  // The client closed (or half-closed) its side. Cheap: one poll() with no wait.
  bool peer_closed() const;
  // The server is past its stop() deadline.
  bool aborted() const { return config_.aborted && config_.aborted->load(); }
  bool cancelled() const { return aborted() || peer_closed(); }

 private:
  Result<std::string> build_head(int status, const HttpHeaders& headers, bool body_allowed,
                                 std::string_view framing);
  Status write(std::string_view bytes);

  Config config_;
  bool started_ = false;
  bool streaming_ = false;
  bool chunked_ = false;
  bool complete_ = false;
  bool failed_ = false;
  bool keep_alive_;
  int status_ = 0;
};

// Server-Sent Events (text/event-stream) over a streaming response. Each event is written
// whole with one write_chunk(), so a client never sees half an event.
class SseStream {
 public:
  explicit SseStream(ResponseWriter& w) : w_(w) {}

  // 200, Content-Type text/event-stream, no caching; `extra` adds headers.
  Status open(const HttpHeaders& extra = {});
  // `data` may span lines (each becomes a "data:" line); `event` and `id` may not.
  Status send(std::string_view data, std::string_view event = {}, std::string_view id = {});
  // A comment line: keeps idle proxies and clients from timing out.
  Status comment(std::string_view text = {});
  Status close() { return w_.finish(); }

 private:
  ResponseWriter& w_;
};

// One SSE event as text, ending in the blank line. Fails when `event` or `id` holds CR, LF or
// NUL (they would start a new field).
Result<std::string> format_sse_event(std::string_view data, std::string_view event = {},
                                     std::string_view id = {});

// "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 5.6.7), independent of the locale.
std::string http_date(std::time_t t);

}  // namespace carapace::http
