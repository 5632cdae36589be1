#include "common/http/connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <exception>
#include <string>

#include "common/base/log.h"
#include "common/http/body_reader.h"
#include "common/http/json_util.h"
#include "common/http/message_parser.h"
#include "common/http/response_writer.h"
#include "common/http/socket_io.h"

namespace carapace::http {

bool BodyBudget::reserve(uint64_t n) {
  uint64_t used = used_.load();
  do {
    if (n > cap_ - used) return false;
  } while (!used_.compare_exchange_weak(used, used + n));
  return true;
}

namespace {

// After refusing a request whose bytes may still be arriving, read and drop them for a moment
// before closing: closing a socket with unread input makes TCP send a reset, which can destroy
// the error response before the client reads it.
constexpr auto kLingerTime = std::chrono::milliseconds(1000);
constexpr size_t kLingerBytes = 1 << 20;
// Chunked bodies reserve budget in steps of this much, not per piece.
constexpr uint64_t kReserveStep = 64 * 1024;

// Returns the bytes it holds to the budget when the request is done.
class Reservation {
 public:
  explicit Reservation(BodyBudget& b) : budget_(b) {}
  ~Reservation() {
    if (bytes_) budget_.release(bytes_);
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  bool grow(uint64_t n) {
    if (!budget_.reserve(n)) return false;
    bytes_ += n;
    return true;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  BodyBudget& budget_;
  uint64_t bytes_ = 0;
};

class Session {
 public:
  Session(int fd, Transport transport, const ServerContext& ctx)
      : fd_(fd),
        transport_(transport),
        ctx_(ctx),
        limits_(ctx.options->limits),
        reader_(fd),
        accepted_(Clock::now()) {}

  void run() {
    bool first = true;
    while (serve_one(first))
      first = false;
  }

 private:
  // Returns whether the connection carries on.
  bool serve_one(bool first);
  bool read_body_into(HttpRequest& req, const BodyFraming& framing, uint64_t max_body,
                      Reservation& reservation);
  bool run_handler(const Router::Route& route, HttpRequest& req, bool keep_alive);
  // Answers with an error and closes the connection.
  bool reject(const Rejection& r, const HttpRequest* req = nullptr);
  // Answers before the handler stage (404, 405, admit); keeps the connection if it may.
  bool answer_early(const HttpResponse& resp, const HttpRequest& req, bool keep_alive);
  ResponseWriter::Config writer_config(const HttpRequest* req, bool keep_alive) const;
  void linger_close();

  int fd_;
  Transport transport_;
  const ServerContext& ctx_;
  const HttpLimits& limits_;
  SocketReader reader_;
  Clock::time_point accepted_;
};

ResponseWriter::Config Session::writer_config(const HttpRequest* req, bool keep_alive) const {
  ResponseWriter::Config c;
  c.fd = fd_;
  c.head_request = req && req->method == "HEAD";
  c.minor_version = req ? req->minor_version : 1;
  c.keep_alive = keep_alive;
  c.write_timeout = limits_.write_timeout;
  c.aborted = ctx_.aborting;
  return c;
}

void Session::linger_close() {
  ::shutdown(fd_, SHUT_WR);
  auto deadline = Clock::now() + kLingerTime;
  size_t drained = 0;
  reader_.set_deadline(deadline);
  std::string sink;
  while (drained < kLingerBytes) {
    sink.clear();
    if (reader_.read_some(sink, SocketReader::kRecvChunk) != IoStatus::kOk) break;
    drained += sink.size();
  }
}

bool Session::reject(const Rejection& r, const HttpRequest* req) {
  ctx_.rejected->fetch_add(1);
  LOG_DEBUG("http: %d %s", r.status, r.message.c_str());
  HttpResponse resp = error_response(r.status, r.message);
  if (r.status == 503) resp.headers.set("Retry-After", "1");
  ResponseWriter w(writer_config(req, /*keep_alive=*/false));
  if (w.send(resp)) linger_close();
  return false;
}

bool Session::answer_early(const HttpResponse& resp, const HttpRequest& req, bool keep_alive) {
  ctx_.rejected->fetch_add(1);
  ResponseWriter w(writer_config(&req, keep_alive));
  if (!w.send(resp)) return false;
  if (w.keep_alive()) return true;
  linger_close();
  return false;
}

bool Session::serve_one(bool first) {
  // A new connection gets header_timeout for its whole first head, so connecting and saying
  // nothing holds a connection slot no longer than that. A persistent one may idle for
  // idle_timeout between requests. Either wait ends at once when the server stops.
  if (reader_.buffered() == 0) {
    if (ctx_.stopping->load()) return false;
    auto idle_deadline =
        first ? accepted_ + limits_.header_timeout : Clock::now() + limits_.idle_timeout;
    if (wait_readable(fd_, idle_deadline, ctx_.stop_fd) != IoStatus::kOk) return false;
  }
  reader_.set_deadline(first ? accepted_ + limits_.header_timeout
                             : Clock::now() + limits_.header_timeout);
  std::string head;
  switch (reader_.read_head(head, limits_.max_head_bytes)) {
    case IoStatus::kOk:
      break;
    case IoStatus::kTimeout:
      return reject({408, "request head not received in time"});
    case IoStatus::kTooLong:
      if (reader_.pending().find("\r\n") == std::string_view::npos)
        return reject({414, "request line too long"});
      return reject({431, "request header fields too large"});
    case IoStatus::kMalformed:
      return reject({400, "a line of the request head ends in a bare LF"});
    default:
      return false;  // the client left
  }

  HttpRequest req;
  req.transport = transport_;
  if (auto r = parse_request_head(head, limits_.max_headers, req)) return reject(*r);
  BodyFraming framing;
  if (auto r = request_framing(req, framing)) return reject(*r, &req);
  if (transport_ == Transport::kTcp && ctx_.options->require_loopback_host &&
      !host_is_loopback(req.headers))
    return reject({421, "Host must be localhost or 127.0.0.1 on this listener"}, &req);
  bool has_body = framing.kind != BodyFraming::kNone;
  // A body the server will not read keeps the connection from being reused.
  bool keep_alive = wants_keep_alive(req) && !ctx_.stopping->load();
  bool keep_if_no_body = keep_alive && !has_body;

  Router::Match match = ctx_.router->find(req.method, req.path);
  switch (match.kind) {
    case Router::Match::kFound:
      break;
    case Router::Match::kBadPath:
      return reject({400, match.error}, &req);
    case Router::Match::kNotFound:
      return answer_early(error_response(404, "no such resource: " + req.path.substr(0, 256)), req,
                          keep_if_no_body);
    case Router::Match::kMethodNotAllowed: {
      HttpResponse resp = error_response(405, req.method + " is not allowed here");
      resp.headers.set("Allow", match.allow);
      return answer_early(resp, req, keep_if_no_body);
    }
  }
  auto query = QueryParams::parse(req.query_string);
  if (!query) return reject({400, query.error().message}, &req);
  req.query = std::move(*query);
  req.path_params = std::move(match.params);

  if (ctx_.options->admit) {
    std::optional<HttpResponse> refusal;
    try {
      refusal = ctx_.options->admit(req);
    } catch (...) {
      refusal = error_response(500, "admission check failed");
    }
    if (refusal) return answer_early(*refusal, req, keep_if_no_body);
  }

  uint64_t max_body = match.route->options.max_body_bytes.value_or(limits_.max_body_bytes);
  if (framing.kind == BodyFraming::kLength && framing.length > max_body)
    return reject({413, "request body is larger than " + std::to_string(max_body) + " bytes"},
                  &req);
  if (auto expect = req.headers.get("Expect")) {
    if (!iequals(*expect, "100-continue")) return reject({417, "unsupported Expect"}, &req);
    // The client waits for this before sending the body: only now is it known to be wanted.
    if (has_body && req.minor_version == 1 &&
        !send_all(fd_, "HTTP/1.1 100 Continue\r\n\r\n", limits_.write_timeout))
      return false;
  }
  Reservation reservation(*ctx_.body_budget);
  if (has_body && !read_body_into(req, framing, max_body, reservation)) return false;
  return run_handler(*match.route, req, keep_alive);
}

bool Session::read_body_into(HttpRequest& req, const BodyFraming& framing, uint64_t max_body,
                             Reservation& reservation) {
  if (framing.kind == BodyFraming::kLength) {
    if (!reservation.grow(framing.length))
      return reject({503, "server is out of request buffer space, retry later"}, &req);
    req.body.reserve(framing.length);
  }
  bool over_budget = false;
  SinkFn sink = [&](std::string_view piece) {
    uint64_t need = req.body.size() + piece.size();
    if (need > reservation.bytes()) {
      uint64_t step = std::max(need - reservation.bytes(), kReserveStep);
      step = std::min(step, std::max(max_body, need) - reservation.bytes());
      if (!reservation.grow(step)) {
        over_budget = true;
        return false;
      }
    }
    req.body.append(piece);
    return true;
  };
  // The body deadline grows with progress: body_timeout plus a second per min_body_rate bytes.
  auto start = Clock::now();
  uint64_t rate = std::max<uint64_t>(limits_.min_body_rate, 1);
  DeadlineFn deadline = [&](uint64_t received) {
    auto earned = std::chrono::seconds(received / rate) +
                  std::chrono::milliseconds((received % rate) * 1000 / rate);
    return start + limits_.body_timeout + earned;
  };
  switch (read_body(reader_, framing, max_body, deadline, sink)) {
    case BodyStatus::kOk:
      return true;
    case BodyStatus::kTimeout:
      return reject({408, "request body not received in time"}, &req);
    case BodyStatus::kTooLarge:
      return reject({413, "request body is larger than " + std::to_string(max_body) + " bytes"},
                    &req);
    case BodyStatus::kMalformed:
      return reject({400, "malformed chunked request body"}, &req);
    case BodyStatus::kStopped:
      if (over_budget)
        return reject({503, "server is out of request buffer space, retry later"}, &req);
      return false;
    default:
      return false;  // the client left
  }
}

bool Session::run_handler(const Router::Route& route, HttpRequest& req, bool keep_alive) {
  ctx_.requests->fetch_add(1);
  ResponseWriter w(writer_config(&req, keep_alive));
  bool threw = false;
  try {
    route.handler(req, w);
  } catch (const std::exception& e) {
    threw = true;
    LOG_WARN("http: handler for %s %s threw: %s", req.method.c_str(), route.pattern.c_str(),
             e.what());
  } catch (...) {
    threw = true;
    LOG_WARN("http: handler for %s %s threw", req.method.c_str(), route.pattern.c_str());
  }
  if (!w.started()) {
    (void)w.send(error_response(500, threw ? "internal error" : "handler sent no response"));
  } else if (!w.complete()) {
    // A handler that failed mid-stream: cut the connection, so the client sees a truncated
    // body instead of a clean end.
    if (threw || w.failed()) return false;
    (void)w.finish();
  }
  return w.keep_alive() && !ctx_.stopping->load();
}

}  // namespace

void serve_connection(int fd, Transport transport, const ServerContext& ctx) {
  try {
    Session(fd, transport, ctx).run();
  } catch (const std::exception& e) {
    // Only allocation failure can get here; the connection is dropped, the server goes on.
    LOG_WARN("http: connection dropped: %s", e.what());
  }
}

}  // namespace carapace::http
