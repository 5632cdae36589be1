// One client connection of the egress proxy, from its request head to the end of its tunnel.
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "common/base/byte_relay.h"
#include "common/http/body_reader.h"
#include "common/http/chunked.h"
#include "common/http/message_parser.h"
#include "common/http/socket_io.h"
#include "egress/proxy/egress_proxy.h"
#include "egress/proxy/proxy_connection.h"
#include "egress/proxy/proxy_target.h"

namespace carapace::egress {
namespace {

using json = nlohmann::json;
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

void EgressProxy::handle(Connection& c) {
  const int fd = c.client.get();
  json line = {{"sandbox", options_.sandbox}};
  auto count = [this](uint64_t EgressStats::*field) {
    std::lock_guard lock(mu_);
    stats_.*field += 1;
  };
  auto refuse = [&](int status, const std::string& reason, uint64_t EgressStats::*field) {
    line["decision"] = "deny";
    line["status"] = status;
    line["reason"] = reason;
    log_line(line.dump(-1, ' ', false, json::error_handler_t::replace));
    count(field);
    answer(fd, status, reason);
  };

  // The head, within a deadline for all of it: a client that trickles bytes (slowloris) holds a
  // thread for head_timeout at most.
  http::SocketReader reader(fd);
  reader.set_deadline(Clock::now() + options_.head_timeout);
  std::string head;
  switch (reader.read_head(head, options_.max_head_bytes)) {
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
  line["method"] = req.method;
  line["host"] = target->host;
  line["port"] = target->port;
  http::BodyFraming framing;
  if (target->kind == ProxyTarget::Kind::kForward) {
    if (auto rejected = http::request_framing(req, framing))
      return refuse(rejected->status, rejected->message, &EgressStats::bad_requests);
  }
  auto dest = parse_destination(target->host, target->port);
  if (!dest.ok()) return refuse(400, dest.error().message, &EgressStats::bad_requests);

  // The name stage, then resolve-then-dial under the same policy.
  std::shared_ptr<const EgressPolicy> policy;
  {
    std::lock_guard lock(mu_);
    policy = policy_;
  }
  Decision named = decide(*policy, *dest);
  if (!named.allowed) {
    if (!named.rule.empty()) line["rule"] = named.rule;
    return refuse(403, named.reason, &EgressStats::denied_rule);
  }
  {
    std::lock_guard cl(c.mu);
    c.destination = *dest;
  }
  DialOptions dial{options_.resolve, options_.check, options_.connect_timeout};
  auto upstream = dial_upstream(*policy, *dest, dial);
  if (!upstream.ok()) {
    const DialRefusal& r = upstream.error();
    if (!r.address.empty()) line["address"] = r.address;
    if (!r.rule.empty()) line["rule"] = r.rule;
    return refuse(dial_status(r.kind), r.reason,
                  r.kind == DialRefusal::Kind::kDenied ? &EgressStats::denied_address
                                                       : &EgressStats::upstream_failures);
  }
  line["address"] = upstream->address.to_string();
  line["rule"] = named.rule;
  {
    std::lock_guard cl(c.mu);
    c.address = upstream->address;
  }
  // A policy replaced while this one dialled has not seen the address: check it here.
  {
    std::lock_guard lock(mu_);
    if (policy_ != policy && !still_allowed(*policy_, options_.check, *dest, upstream->address)) {
      (void)c.cut.write();
    }
  }
  count(&EgressStats::allowed);

  const int up = upstream->fd.get();
  RelayBytes bytes;
  bool sent_all = true;
  if (target->kind == ProxyTarget::Kind::kConnect) {
    // Bytes the client sent after the head (a TLS ClientHello right behind CONNECT) go first.
    sent_all = http::send_all(fd, "HTTP/1.1 200 Connection established\r\n\r\n", kAnswerStall).ok();
    std::string_view early = reader.pending();
    if (sent_all && !early.empty()) {
      sent_all = http::send_all(up, early, options_.idle_timeout).ok();
      bytes.up += early.size();
    }
  } else {
    sent_all = http::send_all(up, forward_request_head(req, *target), options_.idle_timeout).ok();
    if (sent_all) {
      auto st = send_body(reader, framing, up, options_.idle_timeout, bytes.up);
      sent_all = st == http::BodyStatus::kOk;
      if (!sent_all && st != http::BodyStatus::kClosed && st != http::BodyStatus::kError)
        answer(fd, 400, "malformed or unfinished request body");
    }
  }
  RelayEnd end = RelayEnd::kReset;
  if (sent_all) {
    end = run_relay(fd, up, c.cut.fd(), options_.idle_timeout,
                    target->kind == ProxyTarget::Kind::kForward, bytes);
  }
  {
    std::lock_guard lock(mu_);
    stats_.bytes_up += bytes.up;
    stats_.bytes_down += bytes.down;
  }
  line["decision"] = "allow";
  line["reason"] = named.reason;
  line["bytes_up"] = bytes.up;
  line["bytes_down"] = bytes.down;
  line["end"] = relay_end_name(end);
  log_line(line.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace carapace::egress
