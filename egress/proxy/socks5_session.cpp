// The SOCKS5 side of a proxy connection (RFC 1928): method negotiation (§3), the request (§4) and
// the reply (§6), then the same decision, dial and tunnel as an HTTP CONNECT.
#include <optional>
#include <string>
#include <string_view>

#include "common/http/socket_io.h"
#include "egress/proxy/proxy_session.h"
#include "egress/proxy/socks5_request.h"

namespace carapace::egress {
namespace {

constexpr std::chrono::milliseconds kAnswerStall{2000};

// Why a negotiation that stopped coming ended, or nullopt for a client that went away (not a
// request, not logged: as for HTTP).
std::optional<std::string> stall_reason(http::IoStatus st, size_t max_bytes) {
  switch (st) {
    case http::IoStatus::kTimeout:
      return "no complete SOCKS5 negotiation in time";
    case http::IoStatus::kTooLong:
      return "SOCKS5 negotiation over " + std::to_string(max_bytes) + " bytes";
    default:
      return std::nullopt;
  }
}

}  // namespace

void EgressProxy::Session::run_socks5() {
  using socks5::Reply;
  line_["protocol"] = "socks5";
  const EgressProxyOptions& o = proxy_.options_;

  // The greeting and the request, at most max_head_bytes of them in all, as they arrive (a client
  // may send both at once, and tunnel data right behind). `at`: where the current message starts.
  std::string in;
  size_t at = 0;
  auto more = [&] {
    if (in.size() >= o.max_head_bytes) return http::IoStatus::kTooLong;
    return reader_.read_some(in, o.max_head_bytes - in.size());
  };
  // Before a method is chosen, the one answer there can be is X'FF', no acceptable methods (§3):
  // it goes to a greeting that was read and refused, not to one that never came whole.
  auto refuse_greeting = [&](const std::string& reason, bool answer) {
    log_refusal(reason, &EgressStats::bad_requests);
    if (answer)
      (void)http::send_all(fd_, socks5::method_reply(socks5::kMethodNoneAcceptable), kAnswerStall);
  };
  // After it, a §6 reply; the server closes the connection right after a failure reply (§6).
  auto refuse = [&](Reply r, const std::string& reason, Counter field) {
    line_["reply"] = static_cast<int>(r);
    log_refusal(reason, field);
    (void)http::send_all(fd_, socks5::reply(r), kAnswerStall);
  };

  std::optional<socks5::Greeting> greeting;
  for (;;) {
    auto g = socks5::parse_greeting(std::string_view(in).substr(at));
    if (!g.ok()) return refuse_greeting(g.error().reason, true);
    if (*g) {
      greeting = **g;
      break;
    }
    http::IoStatus st = more();
    if (auto why = stall_reason(st, o.max_head_bytes); why) return refuse_greeting(*why, false);
    if (st != http::IoStatus::kOk) return;  // gone
  }
  at += greeting->size;
  // Only X'00' (§3): the sandbox's socket is the credential, and a proxy password would be one
  // more secret inside the sandbox for nothing.
  if (!greeting->offers_no_auth)
    return refuse_greeting("the SOCKS5 client offers no method this proxy accepts", true);
  if (!http::send_all(fd_, socks5::method_reply(socks5::kMethodNoAuth), kAnswerStall).ok()) return;

  std::optional<socks5::Request> req;
  for (;;) {
    auto r = socks5::parse_request(std::string_view(in).substr(at));
    if (!r.ok()) return refuse(r.error().reply, r.error().reason, &EgressStats::bad_requests);
    if (*r) {
      req = std::move(**r);
      break;
    }
    http::IoStatus st = more();
    if (auto why = stall_reason(st, o.max_head_bytes); why)
      return refuse(Reply::kGeneralFailure, *why, &EgressStats::bad_requests);
    if (st != http::IoStatus::kOk) return;  // gone
  }
  at += req->size;
  line_["method"] = "CONNECT";
  line_["host"] = req->host;
  line_["port"] = req->port;
  // A sentinel in the name (credential_session.cpp) is refused before any lookup.
  if (auto r = sentinel_in_host("the SOCKS5 name", req->host)) {
    line_["reply"] = static_cast<int>(Reply::kNotAllowed);
    log_credential_refusal(*r);
    (void)http::send_all(fd_, socks5::reply(Reply::kNotAllowed), kAnswerStall);
    return;
  }
  // A domain name takes the path of a CONNECT host (normalised, IDNA, strict about numeric
  // forms); an IPv4 or IPv6 address is a literal, refused unless a network rule allows it.
  auto dest = parse_destination(req->host, req->port);
  if (!dest.ok())
    return refuse(Reply::kGeneralFailure, dest.error().message, &EgressStats::bad_requests);

  auto upstream = admit(*dest);
  if (!upstream.ok()) {
    const Refusal& r = upstream.error();
    return refuse(socks5::reply_for(r.dial), r.dial.reason, r.counter);
  }
  // A host with a credential: the tunnel is terminated (terminated_session.cpp).
  if (terminates(*dest)) {
    std::string early(std::string_view(in).substr(at));
    early += reader_.pending();
    auto reply_ok = [&] {
      line_["reply"] = static_cast<int>(Reply::kSucceeded);
      return http::send_all(fd_, socks5::reply(Reply::kSucceeded), kAnswerStall).ok();
    };
    auto fail = [&](int, const std::string& reason, Counter field) {
      refuse(Reply::kGeneralFailure, reason, field);
    };
    return terminate(std::move(*upstream), *dest, std::move(early), reply_ok, fail);
  }
  line_["reply"] = static_cast<int>(Reply::kSucceeded);
  const int up = upstream->fd.get();
  RelayBytes bytes;
  bool sent_all = http::send_all(fd_, socks5::reply(Reply::kSucceeded), kAnswerStall).ok();
  // Bytes behind the request are the tunnel's first (a TLS ClientHello sent without waiting for
  // the reply): what was read with the negotiation, then what the reader still holds.
  for (std::string_view early : {std::string_view(in).substr(at), reader_.pending()}) {
    if (!sent_all || early.empty()) continue;
    sent_all = http::send_all(up, early, o.idle_timeout).ok();
    bytes.up += early.size();
  }
  relay_and_log(up, bytes, sent_all, /*only_down=*/false);
}

}  // namespace carapace::egress
