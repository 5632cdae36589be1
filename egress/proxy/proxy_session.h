// One client connection of the egress proxy (internal to egress/proxy), from its first byte to
// the end of its tunnel: the protocol's own parsing and answers (HTTP: http_session.cpp), then
// the steps every protocol takes (proxy_session.cpp): the name stage, resolve-then-dial, the
// tunnel, one decision line and the counters -- so a policy, its live cut and the logs see one
// proxy whatever the client speaks.
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

  // Serves the connection under the head deadline, which covers its whole request head.
  void run();

 private:
  using json = nlohmann::json;
  using Counter = uint64_t EgressStats::*;

  // Why admit() let nothing through.
  struct Refusal {
    DialRefusal dial;  // kDenied for the name stage as well as the address stage
    Counter counter;   // denied_rule, denied_address or upstream_failures
  };

  void run_http();  // http_session.cpp

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
