// What a proxy holds to put credentials into requests (egress/README.md, Credentials): the
// sandbox's credential set, and the TLS origins that plain-HTTP aliases stand for. A sandbox
// speaks plain HTTP to an alias ("http://github-api.carapace.internal/...") so that the proxy can
// see the request head and put the secret in; the proxy then sends it on over verified TLS to the
// origin ("https://api.github.com"). Without the alias the sandbox would have to open TLS itself
// (a CONNECT tunnel), and the proxy could only pass the bytes, sentinel and all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "egress/credentials/credential_set.h"

namespace carapace::egress {

inline constexpr size_t kMaxOrigins = 32;  // per sandbox, as credentials

struct OriginAlias {
  std::string alias;  // a normalised host name, reached as http://alias/ (port 80)
  std::string host;   // the origin's normalised host name: SNI, certificate name and Host
  uint16_t port = 443;

  // "https://api.github.com" or "https://host:8443": the view's "origin".
  std::string origin_text() const;
};

// {"alias": "github-api.carapace.internal", "origin": "https://api.github.com[:port]"}. The
// origin is https:// and a host name (no IP literal: the certificate is checked against a name),
// with an optional port and nothing else (no path, no user information). Invalid-input errors,
// one line; `where` prefixes them ("upstreams[0]").
Result<OriginAlias> origin_alias_from_json(const nlohmann::json& j, const std::string& where);
// An array of them (null: none), at most kMaxOrigins, aliases distinct.
Result<std::vector<OriginAlias>> origin_aliases_from_json(const nlohmann::json& j,
                                                          const std::string& where);
nlohmann::json origin_aliases_to_json(const std::vector<OriginAlias>& origins);

struct ProxyCredentials {
  CredentialSet set;
  std::vector<OriginAlias> origins;

  // The origin whose alias is `host` (normalised), or nullptr.
  const OriginAlias* find_origin(std::string_view host) const;
};

}  // namespace carapace::egress
