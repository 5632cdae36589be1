// One client connection of the egress proxy (internal to egress/proxy), from its first byte to
// the end of its tunnel. The first byte picks the protocol: X'05' is SOCKS5 (RFC 1928 §3: VER),
// which no HTTP request line can start with; anything else is HTTP. Both take the same steps
// after their own parsing (proxy_session.cpp): the name stage, resolve-then-dial, the tunnel, one
// decision line and the counters -- so a policy, its live cut and the logs see one proxy.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/byte_relay.h"
#include "common/http/message_parser.h"
#include "common/http/socket_io.h"
#include "egress/credentials/proxy_credentials.h"
#include "egress/credentials/sentinel_scan.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/egress_proxy.h"
#include "egress/proxy/proxy_connection.h"
#include "egress/proxy/proxy_target.h"
#include "egress/proxy/upstream.h"

namespace carapace::egress {

class EgressProxy::Session {
 public:
  Session(EgressProxy& proxy, Connection& c);

  // Reads the first byte (within the head deadline, which covers the whole request head or
  // SOCKS5 negotiation) and goes the SOCKS5 or the HTTP way.
  void run();

 private:
  using json = nlohmann::json;
  using Counter = uint64_t EgressStats::*;

  // Why admit() let nothing through.
  struct Refusal {
    DialRefusal dial;  // kDenied for the name stage as well as the address stage
    Counter counter;   // denied_rule, denied_address or upstream_failures
  };

  void run_http();    // http_session.cpp
  void run_socks5();  // socks5_session.cpp

  void count(Counter field);
  // Logs the line of a refused request (decision deny and the reason) and counts it under
  // `field`. The answer in the client's protocol is the caller's.
  void log_refusal(const std::string& reason, Counter field);
  // The name stage, then resolve-then-dial under that same policy. Once let through, the
  // connection records its destination and then its address (a new policy re-checks both, and
  // one replaced while this dialled is checked here), the line gets the address and the rule,
  // and it is counted as allowed.
  Result<Upstream, Refusal> admit(const Destination& dest);
  // After the protocol's own preface (`sent_all` false: it did not all go out, no relay): the
  // tunnel until it ends, then the byte counters and the allow line.
  void relay_and_log(int upstream, RelayBytes bytes, bool sent_all, bool only_down);
  // The byte counters and the allow line of a connection that has ended.
  void log_allowed(const RelayBytes& bytes, RelayEnd end);
  // The same line with an end of the caller's naming (a TLS handshake that failed).
  void log_allowed(const RelayBytes& bytes, const char* end);

  // Credentials (credential_session.cpp). The set this connection uses, taken once.
  const ProxyCredentials& credentials();
  // A sentinel in a host name (`what`: "the CONNECT target"), refused before any lookup.
  std::optional<CredentialRefusal> sentinel_in_host(std::string_view what, std::string_view host);
  // Logs a credential refusal (its reason name, the credential's env, whether it is an
  // exfiltration attempt) and counts it; the answer in the client's protocol is the caller's.
  void log_credential_refusal(const CredentialRefusal& r);
  // The head sent upstream for a forwarded request (forward_request_head), with the secrets put
  // in or refused (rewrite_request) -- unless the name stage denies `dest`, which admit() then
  // answers as always. `origin`: the request was for its alias; Host becomes the origin's.
  struct ForwardHead {
    ForwardHead() = default;
    ForwardHead(ForwardHead&&) = default;
    ForwardHead& operator=(ForwardHead&&) = default;
    ~ForwardHead();  // wipes `text`, which may hold a secret

    std::string text;
    std::vector<std::string> used;  // the env names of the credentials put in
  };
  Result<ForwardHead, CredentialRefusal> credentialed_head(const http::HttpRequest& req,
                                                           const ProxyTarget& target,
                                                           const Destination& dest,
                                                           const OriginAlias* origin,
                                                           bool keep_alive = false);
  // After the dial: names the credentials in the line and counts the injection.
  void note_injected(const std::vector<std::string>& used);
  // An alias's request (tls_origin_session.cpp): the policy on the origin, resolve-then-dial, a
  // verified TLS connection, the head and body over it and the response back as it comes.
  using RefuseFn = std::function<void(int status, const std::string& reason, Counter field)>;
  using RefuseCredentialFn = std::function<void(const CredentialRefusal&)>;
  void forward_to_origin(const http::HttpRequest& req, const ProxyTarget& target,
                         const http::BodyFraming& framing, const OriginAlias& origin,
                         const RefuseFn& refuse, const RefuseCredentialFn& refuse_credential);

  // TLS termination of a CONNECT (terminated_session.cpp; egress/README.md, Credentials). Whether
  // `dest` (a name, not a literal) has a credential, so that its CONNECT is terminated.
  bool terminates(const Destination& dest);
  // After admit(): verified TLS to the origin, the protocol's success reply (`reply_ok`; false:
  // the client is gone), the TLS handshake with the client under a leaf for dest.host, then the
  // client's requests one by one, each head through rewrite_request. `early`: bytes the client
  // sent behind its request (the start of its ClientHello). `fail` answers in the client's
  // protocol when the origin cannot be reached over TLS (nothing was sent to the client yet).
  void terminate(Upstream upstream, const Destination& dest, std::string early,
                 const std::function<bool()>& reply_ok, const RefuseFn& fail);
  // The requests over the bridged plaintext: `client` and `origin` are the proxy's ends of the
  // socketpairs to the two TLS streams. False when it answered a refusal (already logged).
  bool serve_terminated(int client, int origin, const Destination& dest);

  EgressProxy& proxy_;
  Connection& c_;
  const int fd_;
  http::SocketReader reader_;
  json line_;
  Decision named_;  // the name stage's decision, once admit() let it through
  std::shared_ptr<const ProxyCredentials> credentials_;
};

}  // namespace carapace::egress
