// One client connection of the egress proxy (internal to egress/proxy), from its first byte to
// the end of its tunnel. The first byte picks the protocol: X'05' is SOCKS5 (RFC 1928 §3: VER),
// which no HTTP request line can start with; anything else is HTTP. Both take the same steps
// after their own parsing (proxy_session.cpp): the name stage, resolve-then-dial, the tunnel, one
// decision line and the counters -- so a policy, its live cut and the logs see one proxy.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/base/byte_relay.h"
#include "common/http/socket_io.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/egress_proxy.h"
#include "egress/proxy/proxy_connection.h"
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

  EgressProxy& proxy_;
  Connection& c_;
  const int fd_;
  http::SocketReader reader_;
  json line_;
  Decision named_;  // the name stage's decision, once admit() let it through
};

}  // namespace carapace::egress
