#include "common/http/response_writer.h"

#include <poll.h>

#include <cstdio>
#include <ctime>

#include "common/http/chunked.h"
#include "common/http/socket_io.h"

namespace carapace::http {
namespace {

// Names the writer owns: a handler's value could contradict the framing actually used.
bool is_framing_header(std::string_view name) {
  return iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") ||
         iequals(name, "Connection");
}

// A response header value may not hold CR, LF or NUL: it would split or cut the head.
bool safe_value(std::string_view v) {
  for (char c : v) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

}  // namespace

std::string http_date(std::time_t t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday % 7],
                tm.tm_mday, kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

ResponseWriter::ResponseWriter(const Config& config)
    : config_(config), keep_alive_(config.keep_alive) {}

Result<std::string> ResponseWriter::build_head(int status, const HttpHeaders& headers,
                                               bool body_allowed, std::string_view framing) {
  if (status < 200 || status > 599) return make_error("response status out of range");
  if (headers.has_token("Connection", "close")) keep_alive_ = false;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  head += reason_phrase(status);
  head += "\r\nDate: " + http_date(std::time(nullptr)) + "\r\n";
  for (const auto& [name, value] : headers.fields()) {
    if (!is_token(name) || !safe_value(value))
      return make_error("response header '" + name + "' is malformed");
    if (is_framing_header(name)) continue;
    head += name + ": " + value + "\r\n";
  }
  if (body_allowed && !framing.empty()) head += std::string(framing) + "\r\n";
  if (!keep_alive_) {
    head += "Connection: close\r\n";
  } else if (config_.minor_version == 0) {
    head += "Connection: keep-alive\r\n";
  }
  head += "\r\n";
  return head;
}

Status ResponseWriter::write(std::string_view bytes) {
  if (failed_) return make_error("response: connection already failed");
  if (aborted()) {
    failed_ = true;
    return make_error("response: server is stopping");
  }
  Status st = send_all(config_.fd, bytes, config_.write_timeout);
  if (!st) failed_ = true;
  return st;
}

Status ResponseWriter::send(const HttpResponse& r) {
  if (started_) return make_error("response already started");
  bool body_allowed = r.status != 204 && r.status != 304;
  std::string framing = "Content-Length: " + std::to_string(body_allowed ? r.body.size() : 0);
  std::string head = TRY(build_head(r.status, r.headers, body_allowed, framing));
  started_ = true;
  status_ = r.status;
  if (body_allowed && !config_.head_request) head += r.body;
  Status st = write(head);
  complete_ = true;
  return st;
}

Status ResponseWriter::begin_stream(int status, const HttpHeaders& headers) {
  if (started_) return make_error("response already started");
  // HTTP/1.0 has no chunked coding: the body runs until the connection closes.
  chunked_ = config_.minor_version >= 1;
  if (!chunked_) keep_alive_ = false;
  bool body_allowed = status != 204 && status != 304;
  std::string head =
      TRY(build_head(status, headers, body_allowed, chunked_ ? "Transfer-Encoding: chunked" : ""));
  started_ = true;
  streaming_ = true;
  status_ = status;
  if (!body_allowed || config_.head_request) chunked_ = false;
  return write(head);
}

Status ResponseWriter::write_chunk(std::string_view data) {
  if (!streaming_ || complete_) return make_error("write_chunk outside a stream");
  if (data.empty()) return failed_ ? make_error("response: connection already failed") : Status();
  if (config_.head_request || status_ == 204 || status_ == 304) return ok_status();
  if (!chunked_) return write(data);
  return write(encode_chunk(data));
}

Status ResponseWriter::finish() {
  if (!streaming_) return make_error("finish outside a stream");
  if (complete_) return ok_status();
  complete_ = true;
  if (!chunked_) return failed_ ? make_error("response: connection already failed") : Status();
  return write(kLastChunk);
}

bool ResponseWriter::peer_closed() const {
  pollfd p{config_.fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

Result<std::string> format_sse_event(std::string_view data, std::string_view event,
                                     std::string_view id) {
  auto single_line = [](std::string_view s) {
    return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
  };
  if (!single_line(event) || !single_line(id))
    return as_invalid_input(make_error("SSE event name or id spans lines"));
  std::string out;
  if (!event.empty()) out += "event: " + std::string(event) + "\n";
  if (!id.empty()) out += "id: " + std::string(id) + "\n";
  // Any of CRLF, CR or LF ends a line in an event stream; each line gets its own data: field.
  size_t start = 0;
  for (;;) {
    size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += "\n";
    if (end == std::string_view::npos) break;
    start = end + (data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n' ? 2 : 1);
  }
  out += "\n";
  return out;
}

Status SseStream::open(const HttpHeaders& extra) {
  HttpHeaders h = extra;
  h.set("Content-Type", "text/event-stream; charset=utf-8");
  h.set("Cache-Control", "no-store");
  return w_.begin_stream(200, h);
}

Status SseStream::send(std::string_view data, std::string_view event, std::string_view id) {
  std::string text = TRY(format_sse_event(data, event, id));
  return w_.write_chunk(text);
}

Status SseStream::comment(std::string_view text) {
  std::string line = ":";
  for (char c : text)
    line.push_back(c == '\r' || c == '\n' ? ' ' : c);
  return w_.write_chunk(line + "\n\n");
}

}  // namespace carapace::http
