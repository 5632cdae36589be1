// What both protocols of a proxy connection share: which one it speaks, the decision and the dial,
// the tunnel and its log line.
#include "egress/proxy/proxy_session.h"

#include "egress/proxy/socks5_request.h"

namespace carapace::egress {

void EgressProxy::handle(Connection& c) {
  Session(*this, c).run();
}

EgressProxy::Session::Session(EgressProxy& proxy, Connection& c)
    : proxy_(proxy),
      c_(c),
      fd_(c.client.get()),
      reader_(fd_),
      line_({{"sandbox", proxy.options_.sandbox}}) {}

void EgressProxy::Session::run() {
  // One deadline for all of the head or the negotiation: a client that trickles bytes
  // (slowloris) holds a thread for head_timeout at most, whichever protocol it speaks.
  reader_.set_deadline(http::Clock::now() + proxy_.options_.head_timeout);
  // Peeked and given back: each path reads its head from the start. A first read that fails
  // goes the HTTP way, which meets the same end again (408 past the deadline, silence on a close).
  std::string first;
  if (reader_.read_some(first, 1) == http::IoStatus::kOk) {
    reader_.unread(1);
    if (static_cast<uint8_t>(first[0]) == socks5::kVersion) return run_socks5();
  }
  run_http();
}

void EgressProxy::Session::count(Counter field) {
  std::lock_guard lock(proxy_.mu_);
  proxy_.stats_.*field += 1;
}

void EgressProxy::Session::log_refusal(const std::string& reason, Counter field) {
  line_["decision"] = "deny";
  line_["reason"] = reason;
  proxy_.log_line(line_.dump(-1, ' ', false, json::error_handler_t::replace));
  count(field);
}

Result<Upstream, EgressProxy::Session::Refusal> EgressProxy::Session::admit(
    const Destination& dest) {
  std::shared_ptr<const EgressPolicy> policy;
  {
    std::lock_guard lock(proxy_.mu_);
    policy = proxy_.policy_;
  }
  Decision named = decide(*policy, dest);
  if (!named.allowed) {
    if (!named.rule.empty()) line_["rule"] = named.rule;
    return Refusal{DialRefusal{DialRefusal::Kind::kDenied, named.reason, named.rule, ""},
                   &EgressStats::denied_rule};
  }
  {
    std::lock_guard cl(c_.mu);
    c_.destination = dest;
  }
  const EgressProxyOptions& o = proxy_.options_;
  auto upstream = dial_upstream(*policy, dest, DialOptions{o.resolve, o.check, o.connect_timeout});
  if (!upstream.ok()) {
    const DialRefusal& r = upstream.error();
    if (!r.address.empty()) line_["address"] = r.address;
    if (!r.rule.empty()) line_["rule"] = r.rule;
    return Refusal{r, r.kind == DialRefusal::Kind::kDenied ? &EgressStats::denied_address
                                                           : &EgressStats::upstream_failures};
  }
  line_["address"] = upstream->address.to_string();
  line_["rule"] = named.rule;
  {
    std::lock_guard cl(c_.mu);
    c_.address = upstream->address;
  }
  // A policy replaced while this one dialled has not seen the address: check it here.
  {
    std::lock_guard lock(proxy_.mu_);
    if (proxy_.policy_ != policy &&
        !still_allowed(*proxy_.policy_, o.check, dest, upstream->address)) {
      (void)c_.cut.write();
    }
  }
  count(&EgressStats::allowed);
  named_ = std::move(named);
  return std::move(*upstream);
}

void EgressProxy::Session::relay_and_log(int upstream, RelayBytes bytes, bool sent_all,
                                         bool only_down) {
  RelayEnd end = RelayEnd::kReset;
  if (sent_all)
    end = run_relay(fd_, upstream, c_.cut.fd(), proxy_.options_.idle_timeout, only_down, bytes);
  log_allowed(bytes, end);
}

void EgressProxy::Session::log_allowed(const RelayBytes& bytes, RelayEnd end) {
  log_allowed(bytes, relay_end_name(end));
}

void EgressProxy::Session::log_allowed(const RelayBytes& bytes, const char* end) {
  {
    std::lock_guard lock(proxy_.mu_);
    proxy_.stats_.bytes_up += bytes.up;
    proxy_.stats_.bytes_down += bytes.down;
  }
  line_["decision"] = "allow";
  line_["reason"] = named_.reason;
  line_["bytes_up"] = bytes.up;
  line_["bytes_down"] = bytes.down;
  line_["end"] = end;
  proxy_.log_line(line_.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace carapace::egress
