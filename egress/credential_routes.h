// The egress proxy's credential routes, for the daemon that owns it. The only way secrets reach
// the proxy: never on its command line or in its environment (both readable in /proc), only in
// a body on its 0600 control socket.
//   PUT /credentials {"credentials": [{"hosts": [...], "header": "..." | "query": "...",
//                     "secret": "...", "env": "NAME", "sentinel": "carapace-cred-<32 hex>"}],
//                     "upstreams": [{"alias": "name", "origin": "https://host[:port]"}]}
//     replaces both lists at once (an empty or absent list: none); the sentinels are the
//     caller's, kept across rotations. 200 with the view; 400 with one line that never holds a
//     secret, the old credentials kept.
//   GET /credentials: the view, {"credentials": [... "secret": "<redacted>"], "upstreams": [...]}
//   GET /ca: {"cert_pem": "-----BEGIN CERTIFICATE-----..."}, the proxy's CA certificate (never
//     its key), which the sandbox trusts for the hosts whose CONNECTs are terminated.
#pragma once

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/http/router.h"
#include "egress/proxy/egress_proxy.h"

namespace carapace::egress {

// The body of PUT /credentials, checked as a whole.
Result<ProxyCredentials> proxy_credentials_from_json(const nlohmann::json& body);
// The view: no secret, no sentinel.
nlohmann::json proxy_credentials_to_json(const ProxyCredentials& credentials);

Status add_credential_routes(http::Router& router, EgressProxy& proxy);

}  // namespace carapace::egress
