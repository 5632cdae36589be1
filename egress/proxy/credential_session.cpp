// Credentials on a proxy connection (egress/README.md, Credentials): sentinels refused in host
// names, and a forwarded request's head given its secrets or refused, before anything is sent.
#include <string.h>

#include <string>
#include <string_view>
#include <utility>

#include "egress/credentials/request_rewrite.h"
#include "egress/proxy/proxy_session.h"

namespace carapace::egress {
namespace {

bool is_exfiltration(CredentialRefusalReason r) {
  return r == CredentialRefusalReason::kSentinelToOtherHost ||
         r == CredentialRefusalReason::kUnknownSentinel;
}

// The head forward_request_head made, read back: its own output, so one "Name: value" per line.
RequestHead split_head(std::string_view text) {
  RequestHead out;
  size_t eol = text.find("\r\n");
  const std::string_view line = text.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  out.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  text.remove_prefix(eol + 2);
  while ((eol = text.find("\r\n")) != std::string_view::npos && eol != 0) {
    const std::string_view field = text.substr(0, eol);
    const size_t colon = field.find(':');
    std::string_view value = field.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
    out.headers.emplace_back(std::string(field.substr(0, colon)), std::string(value));
    text.remove_prefix(eol + 2);
  }
  return out;
}

std::string join_head(const http::HttpRequest& req, const RequestHead& head) {
  std::string out =
      req.method + " " + head.target + " HTTP/1." + std::to_string(req.minor_version) + "\r\n";
  for (const auto& [name, value] : head.headers)
    out += name + ": " + value + "\r\n";
  return out + "\r\n";
}

}  // namespace

EgressProxy::Session::ForwardHead::~ForwardHead() {
  explicit_bzero(text.data(), text.size());
}

const ProxyCredentials& EgressProxy::Session::credentials() {
  if (!credentials_) credentials_ = proxy_.credentials();
  return *credentials_;
}

std::optional<CredentialRefusal> EgressProxy::Session::sentinel_in_host(std::string_view what,
                                                                        std::string_view host) {
  return refuse_sentinel_in(credentials().set, what, host);
}

void EgressProxy::Session::log_credential_refusal(const CredentialRefusal& r) {
  if (!r.env.empty()) line_["credential"] = r.env;
  line_["message"] = r.message;
  // A sentinel on its way to where its secret must not go: a program in the sandbox trying to
  // send its credential elsewhere (a prompt-injected agent, a malicious package).
  if (is_exfiltration(r.reason)) line_["exfiltration_attempt"] = true;
  log_refusal(std::string("credential_") + refusal_reason_name(r.reason),
              &EgressStats::credential_refused);
}

Result<EgressProxy::Session::ForwardHead, CredentialRefusal>
EgressProxy::Session::credentialed_head(const http::HttpRequest& req, const ProxyTarget& target,
                                        const Destination& dest, const OriginAlias* origin,
                                        bool keep_alive) {
  ProxyTarget sent = target;
  if (origin != nullptr) {
    sent.host = origin->host;
    sent.port = origin->port;
  }
  ForwardHead out;
  out.text = forward_request_head(req, sent, keep_alive);
  std::shared_ptr<const EgressPolicy> policy;
  {
    std::lock_guard lock(proxy_.mu_);
    policy = proxy_.policy_;
  }
  if (!decide(*policy, dest).allowed) return out;  // admit() refuses it, with the policy's reason

  RequestHead head = split_head(out.text);
  if (origin != nullptr) {
    // https's own port needs no mention (RFC 9110 7.2).
    for (auto& [name, value] : head.headers) {
      if (http::iequals(name, "Host"))
        value = origin->host + (origin->port == 443 ? "" : ":" + std::to_string(origin->port));
    }
  }
  RewriteDecision d = rewrite_request(credentials().set, dest, head);
  switch (d.kind) {
    case RewriteDecision::Kind::kRefused:
      return std::move(d.refusal);
    case RewriteDecision::Kind::kRewritten:
      explicit_bzero(out.text.data(), out.text.size());
      out.text = join_head(req, d.head);
      out.used = std::move(d.used);
      for (auto& [name, value] : d.head.headers)
        explicit_bzero(value.data(), value.size());
      explicit_bzero(d.head.target.data(), d.head.target.size());
      break;
    case RewriteDecision::Kind::kUnchanged:
      if (origin != nullptr) out.text = join_head(req, head);
      break;
  }
  return out;
}

void EgressProxy::Session::note_injected(const std::vector<std::string>& used) {
  if (used.empty()) return;
  std::string names;
  for (const std::string& env : used)
    names += (names.empty() ? "" : ",") + env;
  line_["credential"] = names;
  count(&EgressStats::credential_injected);
}

}  // namespace carapace::egress
