// TLS termination of a CONNECT (HTTP or SOCKS5) to a host that has a credential (egress/README.md,
// Credentials): the proxy is the client's TLS server, with a leaf for the host signed by its own
// CA (tls_authority.h), and the origin's verified TLS client. Each TLS stream is bridged to a
// socketpair by a thread of its own (TlsStream::bridge), so the requests in between are read and
// written as plain HTTP on sockets, as everywhere else in the proxy: each head goes through
// rewrite_request (the same credentialed_head as a plain-HTTP request), each body is sent on in
// its framing, each response is relayed with its own framing and never rewritten, and one
// request's end is known before the next head is read, so no request rides another's rewrite.
#include <sys/socket.h>

#include <string>
#include <system_error>
#include <thread>

#include "common/base/unique_fd.h"
#include "common/http/body_reader.h"
#include "common/http/chunked.h"
#include "common/http/message_parser.h"
#include "egress/proxy/proxy_session.h"
#include "egress/proxy/tls_authority.h"
#include "egress/proxy/tls_client.h"

namespace carapace::egress {
namespace {

constexpr size_t kMaxHeaderFields = 100;
constexpr size_t kMaxResponseHead = 64 * 1024;

// The proxy's own answer inside the client's TLS, as the plain-HTTP path gives it.
void answer(int fd, int status, const std::string& reason, std::chrono::milliseconds stall) {
  const char* text = status == 400   ? "Bad Request"
                     : status == 403 ? "Forbidden"
                     : status == 431 ? "Request Header Fields Too Large"
                                     : "Bad Gateway";
  std::string body = "carapace egress: " + reason + "\n";
  std::string one_line = reason;
  for (char& ch : one_line) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  }
  (void)http::send_all(fd,
                       "HTTP/1.1 " + std::to_string(status) + " " + text +
                           "\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                           "X-Carapace-Egress: " +
                           one_line + "\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body,
                       stall);
}

// A message body from `reader` to `to` in the framing it came with (chunked: decoded and
// re-chunked, trailers dropped).
http::BodyStatus pass_body(http::SocketReader& reader, const http::BodyFraming& framing, int to,
                           std::chrono::milliseconds idle) {
  if (framing.kind == http::BodyFraming::kNone) return http::BodyStatus::kOk;
  const bool chunked = framing.kind == http::BodyFraming::kChunked;
  auto deadline = [idle](uint64_t) { return http::Clock::now() + idle; };
  auto sink = [&](std::string_view piece) {
    if (piece.empty()) return true;
    return http::send_all(to, chunked ? http::encode_chunk(piece) : std::string(piece), idle).ok();
  };
  auto st = http::read_body(reader, framing, UINT64_MAX, deadline, sink);
  if (st == http::BodyStatus::kOk && chunked && !http::send_all(to, http::kLastChunk, idle).ok())
    return http::BodyStatus::kError;
  return st;
}

}  // namespace

bool EgressProxy::Session::terminates(const Destination& dest) {
  // A literal has no name for a leaf, nor for checking the origin's certificate: a tunnel.
  if (dest.literal || !proxy_.authority_) return false;
  for (const Credential& c : credentials().set.entries()) {
    if (c.is_for(dest)) return true;
  }
  return false;
}

void EgressProxy::Session::terminate(Upstream upstream, const Destination& dest, std::string early,
                                     const std::function<bool()>& reply_ok, const RefuseFn& fail) {
  const EgressProxyOptions& o = proxy_.options_;
  line_["tls_terminated"] = true;
  const std::string origin_text = dest.host + ":" + std::to_string(dest.port);
  if (!proxy_.tls_)
    return fail(502, "no TLS to " + origin_text + ": " + proxy_.tls_error_,
                &EgressStats::upstream_failures);
  auto server = proxy_.authority_->server_for(dest.host);
  if (!server.ok()) return fail(502, server.error().message, &EgressStats::upstream_failures);
  // The origin first: one that cannot prove it is the host gets nothing, and the client a
  // refusal instead of a tunnel.
  auto origin = TlsStream::connect(*proxy_.tls_, upstream.fd.get(), dest.host,
                                   http::Clock::now() + o.connect_timeout, c_.cut.fd());
  if (!origin.ok())
    return fail(502, "TLS to " + origin_text + ": " + origin.error().message,
                &EgressStats::upstream_failures);
  if (!reply_ok()) return log_allowed({}, RelayEnd::kReset);
  auto client = TlsStream::accept((*server)->get(), fd_, std::move(early),
                                  http::Clock::now() + o.head_timeout, c_.cut.fd());
  if (!client.ok()) {
    // A client that does not trust this proxy's CA ends here (its alert is the message).
    line_["message"] = "TLS with the client: " + client.error().message;
    return log_allowed({}, "client_tls_failed");
  }

  int to_client[2];
  int to_origin[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, to_client) != 0)
    return log_allowed({}, RelayEnd::kReset);
  UniqueFd client_inner(to_client[0]), client_outer(to_client[1]);
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, to_origin) != 0)
    return log_allowed({}, RelayEnd::kReset);
  UniqueFd origin_inner(to_origin[0]), origin_outer(to_origin[1]);

  RelayBytes client_bytes;  // up: plaintext from the client
  RelayBytes origin_bytes;
  RelayEnd client_end = RelayEnd::kReset;
  auto pump = [&o](TlsStream& tls, int plain, RelayBytes& bytes, RelayEnd& end) {
    end = tls.bridge(plain, o.idle_timeout, bytes);
    ::shutdown(plain, SHUT_RDWR);  // the session's reads on the other end see the end
  };
  RelayEnd origin_end = RelayEnd::kReset;
  std::thread client_pump;
  std::thread origin_pump;
  try {
    client_pump = std::thread(pump, std::ref(**client), client_inner.get(), std::ref(client_bytes),
                              std::ref(client_end));
    origin_pump = std::thread(pump, std::ref(**origin), origin_inner.get(), std::ref(origin_bytes),
                              std::ref(origin_end));
  } catch (const std::system_error&) {
    // No thread to be had: the connection ends.
  }
  const bool pumping = client_pump.joinable() && origin_pump.joinable();
  const bool served = !pumping || serve_terminated(client_outer.get(), origin_outer.get(), dest);
  ::shutdown(client_outer.get(), SHUT_RDWR);
  ::shutdown(origin_outer.get(), SHUT_RDWR);
  if (client_pump.joinable()) client_pump.join();
  if (origin_pump.joinable()) origin_pump.join();
  if (!served) {
    // A refusal was logged (its own line); only the bytes are left to count.
    std::lock_guard lock(proxy_.mu_);
    proxy_.stats_.bytes_up += client_bytes.up;
    proxy_.stats_.bytes_down += client_bytes.down;
    return;
  }
  log_allowed(client_bytes, pumping ? client_end : RelayEnd::kReset);
}

bool EgressProxy::Session::serve_terminated(int client, int origin, const Destination& dest) {
  const EgressProxyOptions& o = proxy_.options_;
  http::SocketReader in(client);
  http::SocketReader back(origin);
  auto refuse = [&](int status, const std::string& reason, Counter field) {
    line_["status"] = status;
    log_refusal(reason, field);
    answer(client, status, reason, o.idle_timeout);
    return false;
  };
  ProxyTarget target;
  target.kind = ProxyTarget::Kind::kForward;
  target.host = dest.host;
  target.port = dest.port;
  // Host is the CONNECT host, whatever the client sent (as for an absolute-form request).
  OriginAlias self{dest.host, dest.host, dest.port};
  uint64_t requests = 0;
  for (;;) {
    in.set_deadline(http::Clock::now() + o.idle_timeout);
    std::string head;
    switch (in.read_head(head, o.max_head_bytes)) {
      case http::IoStatus::kOk:
        break;
      case http::IoStatus::kTooLong:
        return refuse(431, "request head too large", &EgressStats::bad_requests);
      case http::IoStatus::kMalformed:
        return refuse(400, "malformed request head", &EgressStats::bad_requests);
      default:
        return true;  // the client is done (or idle)
    }
    http::HttpRequest req;
    if (auto rejected =
            http::parse_request_head(head, kMaxHeaderFields, req, http::TargetForms::kOrigin))
      return refuse(rejected->status, rejected->message, &EgressStats::bad_requests);
    http::BodyFraming framing;
    if (auto rejected = http::request_framing(req, framing))
      return refuse(rejected->status, rejected->message, &EgressStats::bad_requests);
    line_["method"] = req.method;
    line_["requests"] = ++requests;
    // The policy and the credentials of now, for every request: a policy that no longer allows
    // the host (its cut is on its way) sends nothing more, a revoked credential is refused.
    {
      std::lock_guard lock(proxy_.mu_);
      if (!decide(*proxy_.policy_, dest).allowed)
        return refuse(403, "the policy no longer allows " + dest.host, &EgressStats::denied_rule);
    }
    credentials_ = proxy_.credentials();
    target.origin_target = req.target;
    auto forward = credentialed_head(req, target, dest, &self, /*keep_alive=*/true);
    if (!forward.ok()) {
      const CredentialRefusal& r = forward.error();
      line_["status"] = 403;
      log_credential_refusal(r);
      answer(client, 403,
             std::string("credential_") + refusal_reason_name(r.reason) + ": " + r.message,
             o.idle_timeout);
      return false;
    }
    note_injected(forward->used);
    if (!http::send_all(origin, forward->text, o.idle_timeout).ok()) return true;
    auto st = pass_body(in, framing, origin, o.idle_timeout);
    if (st != http::BodyStatus::kOk) {
      if (st == http::BodyStatus::kClosed || st == http::BodyStatus::kError) return true;
      return refuse(400, "malformed or unfinished request body", &EgressStats::bad_requests);
    }

    // The response as it comes, never rewritten: interim ones (1xx), then the final one.
    for (;;) {
      back.set_deadline(http::Clock::now() + o.idle_timeout);
      std::string rhead;
      if (back.read_head(rhead, kMaxResponseHead) != http::IoStatus::kOk) {
        answer(client, 502, "no response from " + dest.host, o.idle_timeout);
        return true;
      }
      http::HttpHeaders fields;
      auto status = http::parse_response_head(rhead, kMaxHeaderFields, fields);
      if (!status.ok()) {
        answer(client, 502, "malformed response from " + dest.host, o.idle_timeout);
        return true;
      }
      auto rframing = http::response_framing(req.method, status->status, fields);
      if (!rframing.ok()) {
        answer(client, 502, "malformed response framing from " + dest.host, o.idle_timeout);
        return true;
      }
      if (!http::send_all(client, rhead + "\r\n", o.idle_timeout).ok()) return true;
      // No protocol switch is carried (Upgrade is never sent on).
      if (status->status == 101) return true;
      if (status->status < 200) continue;
      if (pass_body(back, *rframing, client, o.idle_timeout) != http::BodyStatus::kOk) return true;
      const bool server_keeps =
          rframing->kind != http::BodyFraming::kUntilClose &&
          !fields.has_token("Connection", "close") &&
          (status->minor_version == 1 || fields.has_token("Connection", "keep-alive"));
      if (!server_keeps || !http::wants_keep_alive(req)) return true;
      break;
    }
  }
}

}  // namespace carapace::egress
