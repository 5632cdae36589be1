// A plain-HTTP request for an alias (proxy_credentials.h) sent on to its origin over verified
// TLS: the sandbox speaks plain HTTP so that the proxy sees the head and can put the secret in,
// and the network only ever sees TLS to the real host. The policy is the origin's (the alias is
// only a name for it), resolve-then-dial as for any request; the response comes back as it came.
#include <string>

#include "common/base/byte_relay.h"
#include "common/http/body_reader.h"
#include "common/http/chunked.h"
#include "egress/policy/quote.h"
#include "egress/proxy/proxy_session.h"
#include "egress/proxy/tls_client.h"

namespace carapace::egress {
namespace {

constexpr size_t kRelayChunk = 64 * 1024;

int dial_refusal_status(DialRefusal::Kind k) {
  switch (k) {
    case DialRefusal::Kind::kDenied:
      return 403;
    case DialRefusal::Kind::kTimeout:
      return 504;
    default:
      return 502;
  }
}

// The response, from the origin to the client, until the origin ends it.
RelayEnd relay_down(TlsStream& tls, int client, std::chrono::milliseconds idle, RelayBytes& bytes) {
  std::string buf;
  for (;;) {
    buf.clear();
    switch (tls.read_some(buf, kRelayChunk, idle)) {
      case http::IoStatus::kOk:
        if (!http::send_all(client, buf, idle).ok()) return RelayEnd::kReset;
        bytes.down += buf.size();
        continue;
      case http::IoStatus::kClosed:
        return RelayEnd::kClosed;
      case http::IoStatus::kTimeout:
        return RelayEnd::kIdle;
      case http::IoStatus::kCancelled:
        return RelayEnd::kStopped;
      default:
        return RelayEnd::kReset;
    }
  }
}

}  // namespace

void EgressProxy::Session::forward_to_origin(const http::HttpRequest& req,
                                             const ProxyTarget& target,
                                             const http::BodyFraming& framing,
                                             const OriginAlias& origin, const RefuseFn& refuse,
                                             const RefuseCredentialFn& refuse_credential) {
  const EgressProxyOptions& o = proxy_.options_;
  line_["alias"] = origin.alias;
  line_["host"] = origin.host;
  line_["port"] = origin.port;
  line_["tls"] = true;
  if (target.port != 80)
    return refuse(400, "the alias " + egress::quoted(origin.alias) + " is plain http on port 80",
                  &EgressStats::bad_requests);
  auto dest = parse_destination(origin.host, origin.port);
  if (!dest.ok()) return refuse(400, dest.error().message, &EgressStats::bad_requests);
  auto head = credentialed_head(req, target, *dest, &origin);
  if (!head.ok()) return refuse_credential(head.error());

  auto upstream = admit(*dest);
  if (!upstream.ok()) {
    const Refusal& r = upstream.error();
    return refuse(dial_refusal_status(r.dial.kind), r.dial.reason, r.counter);
  }
  if (!proxy_.tls_)
    return refuse(502, "no TLS to " + origin.origin_text() + ": " + proxy_.tls_error_,
                  &EgressStats::upstream_failures);
  auto tls = TlsStream::connect(*proxy_.tls_, upstream->fd.get(), origin.host,
                                http::Clock::now() + o.connect_timeout, c_.cut.fd());
  // Nothing of the request has gone anywhere yet: a server that cannot prove it is the origin
  // gets no byte of it.
  if (!tls.ok())
    return refuse(502, "TLS to " + origin.origin_text() + ": " + tls.error().message,
                  &EgressStats::upstream_failures);
  note_injected(head->used);

  RelayBytes bytes;
  RelayEnd end = RelayEnd::kReset;
  bool sent = (*tls)->write_all(head->text, o.idle_timeout).ok();
  if (sent && framing.kind != http::BodyFraming::kNone) {
    const bool chunked = framing.kind == http::BodyFraming::kChunked;
    auto deadline = [&o](uint64_t) { return http::Clock::now() + o.idle_timeout; };
    auto sink = [&](std::string_view piece) {
      if (piece.empty()) return true;
      std::string framed = chunked ? http::encode_chunk(piece) : std::string(piece);
      if (!(*tls)->write_all(framed, o.idle_timeout).ok()) return false;
      bytes.up += piece.size();
      return true;
    };
    auto st = http::read_body(reader_, framing, UINT64_MAX, deadline, sink);
    sent = st == http::BodyStatus::kOk &&
           (!chunked || (*tls)->write_all(http::kLastChunk, o.idle_timeout).ok());
    if (st != http::BodyStatus::kOk && st != http::BodyStatus::kClosed &&
        st != http::BodyStatus::kError)
      return refuse(400, "malformed or unfinished request body", &EgressStats::bad_requests);
  }
  if (sent) end = relay_down(**tls, fd_, o.idle_timeout, bytes);
  log_allowed(bytes, end);
}

}  // namespace carapace::egress
