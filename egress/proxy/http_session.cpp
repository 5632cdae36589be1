// The HTTP side of a proxy connection (RFC 9112): CONNECT in authority form and absolute-form
// requests, from the head to the tunnel or the forwarded request.
#include "common/http/body_reader.h"
#include "common/http/chunked.h"
#include "common/http/message_parser.h"
#include "common/http/socket_io.h"
#include "egress/proxy/proxy_session.h"
#include "egress/proxy/proxy_target.h"

namespace carapace::egress {
namespace {

using Clock = http::Clock;

constexpr size_t kMaxHeaderFields = 100;
constexpr std::chrono::milliseconds kAnswerStall{2000};

const char* status_text(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

// The proxy's own answer (RFC 9110 15): the reason in a header a client can log and in the body.
void answer(int fd, int status, const std::string& reason) {
  std::string body = "carapace egress: " + reason + "\n";
  std::string one_line = reason;
  for (char& ch : one_line) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  }
  std::string msg =
      "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
      "\r\nContent-Type: text/plain\r\nConnection: close\r\nX-Carapace-Egress: " + one_line +
      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)http::send_all(fd, msg, kAnswerStall);
}

int dial_status(DialRefusal::Kind k) {
  switch (k) {
    case DialRefusal::Kind::kDenied:
      return 403;
    case DialRefusal::Kind::kTimeout:
      return 504;
    case DialRefusal::Kind::kUnresolved:
    case DialRefusal::Kind::kUnreachable:
      return 502;
  }
  return 502;
}

// Sends a forwarded request's body upstream as it arrives, in the framing it came with.
http::BodyStatus send_body(http::SocketReader& reader, const http::BodyFraming& framing,
                           int upstream, std::chrono::milliseconds idle, uint64_t& sent) {
  if (framing.kind == http::BodyFraming::kNone) return http::BodyStatus::kOk;
  const bool chunked = framing.kind == http::BodyFraming::kChunked;
  auto deadline = [idle](uint64_t) { return Clock::now() + idle; };
  auto sink = [&](std::string_view piece) {
    if (piece.empty()) return true;
    std::string framed = chunked ? http::encode_chunk(piece) : std::string(piece);
    if (!http::send_all(upstream, framed, idle).ok()) return false;
    sent += piece.size();
    return true;
  };
  auto st = http::read_body(reader, framing, UINT64_MAX, deadline, sink);
  if (st == http::BodyStatus::kOk && chunked &&
      !http::send_all(upstream, http::kLastChunk, idle).ok())
    return http::BodyStatus::kError;
  return st;
}

}  // namespace

void EgressProxy::Session::run_http() {
  line_["protocol"] = "http";
  const EgressProxyOptions& o = proxy_.options_;
  auto refuse = [&](int status, const std::string& reason, Counter field) {
    line_["status"] = status;
    log_refusal(reason, field);
    answer(fd_, status, reason);
  };

  std::string head;
  switch (reader_.read_head(head, o.max_head_bytes)) {
    case http::IoStatus::kOk:
      break;
    case http::IoStatus::kTimeout:
      return refuse(408, "no complete request head in time", &EgressStats::bad_requests);
    case http::IoStatus::kTooLong:
      return refuse(431, "request head too large", &EgressStats::bad_requests);
    case http::IoStatus::kMalformed:
      return refuse(400, "malformed request head", &EgressStats::bad_requests);
    default:
      return;  // gone before asking anything
  }
  http::HttpRequest req;
  if (auto rejected =
          http::parse_request_head(head, kMaxHeaderFields, req, http::TargetForms::kProxy))
    return refuse(rejected->status, rejected->message, &EgressStats::bad_requests);
  auto target = parse_proxy_target(req);
  if (!target.ok()) return refuse(400, target.error().message, &EgressStats::bad_requests);
  line_["method"] = req.method;
  line_["host"] = target->host;
  line_["port"] = target->port;
  http::BodyFraming framing;
  if (target->kind == ProxyTarget::Kind::kForward) {
    if (auto rejected = http::request_framing(req, framing))
      return refuse(rejected->status, rejected->message, &EgressStats::bad_requests);
  }
  // Credentials (credential_session.cpp): a sentinel in the host is refused before any lookup;
  // an alias's request goes to its TLS origin; a plain request's head gets its secrets put in,
  // or is refused with nothing dialled.
  auto refuse_credential = [&](const CredentialRefusal& r) {
    line_["status"] = 403;
    log_credential_refusal(r);
    answer(fd_, 403, std::string("credential_") + refusal_reason_name(r.reason) + ": " + r.message);
  };
  if (auto r = sentinel_in_host(
          target->kind == ProxyTarget::Kind::kConnect ? "the CONNECT target" : "the request's host",
          target->host))
    return refuse_credential(*r);
  auto dest = parse_destination(target->host, target->port);
  if (!dest.ok()) return refuse(400, dest.error().message, &EgressStats::bad_requests);
  ForwardHead forward;
  if (target->kind == ProxyTarget::Kind::kForward) {
    if (const OriginAlias* origin = credentials().find_origin(dest->host))
      return forward_to_origin(req, *target, framing, *origin, refuse, refuse_credential);
    auto head = credentialed_head(req, *target, *dest, nullptr);
    if (!head.ok()) return refuse_credential(head.error());
    forward = std::move(*head);
  }

  auto upstream = admit(*dest);
  if (!upstream.ok()) {
    const Refusal& r = upstream.error();
    return refuse(dial_status(r.dial.kind), r.dial.reason, r.counter);
  }
  note_injected(forward.used);
  // A host with a credential: the tunnel is terminated (terminated_session.cpp).
  if (target->kind == ProxyTarget::Kind::kConnect && terminates(*dest)) {
    auto reply_ok = [this] {
      return http::send_all(fd_, "HTTP/1.1 200 Connection established\r\n\r\n", kAnswerStall).ok();
    };
    return terminate(std::move(*upstream), *dest, std::string(reader_.pending()), reply_ok, refuse);
  }
  const int up = upstream->fd.get();
  RelayBytes bytes;
  bool sent_all = true;
  if (target->kind == ProxyTarget::Kind::kConnect) {
    // Bytes the client sent after the head (a TLS ClientHello right behind CONNECT) go first.
    sent_all =
        http::send_all(fd_, "HTTP/1.1 200 Connection established\r\n\r\n", kAnswerStall).ok();
    std::string_view early = reader_.pending();
    if (sent_all && !early.empty()) {
      sent_all = http::send_all(up, early, o.idle_timeout).ok();
      bytes.up += early.size();
    }
  } else {
    sent_all = http::send_all(up, forward.text, o.idle_timeout).ok();
    if (sent_all) {
      auto st = send_body(reader_, framing, up, o.idle_timeout, bytes.up);
      sent_all = st == http::BodyStatus::kOk;
      if (!sent_all && st != http::BodyStatus::kClosed && st != http::BodyStatus::kError)
        answer(fd_, 400, "malformed or unfinished request body");
    }
  }
  relay_and_log(up, bytes, sent_all, target->kind == ProxyTarget::Kind::kForward);
}

}  // namespace carapace::egress
