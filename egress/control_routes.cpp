#include "egress/control_routes.h"

#include "common/http/json_util.h"
#include "egress/credential_routes.h"
#include "egress/policy/policy_json.h"

namespace carapace::egress {

nlohmann::json stats_to_json(const EgressStats& s) {
  return {{"connections", s.connections},
          {"allowed", s.allowed},
          {"denied", {{"rule", s.denied_rule}, {"address", s.denied_address}}},
          {"bad_requests", s.bad_requests},
          {"upstream_failures", s.upstream_failures},
          {"over_capacity", s.over_capacity},
          {"bytes_up", s.bytes_up},
          {"bytes_down", s.bytes_down},
          {"active", s.active},
          {"credential_injected", s.credential_injected},
          {"credential_refused", s.credential_refused}};
}

Status add_control_routes(http::Router& router, EgressProxy& proxy) {
  TRY_STATUS(add_credential_routes(router, proxy));
  TRY_STATUS(router.add("GET", "/policy", [&proxy](const http::HttpRequest&) {
    return http::json_response(200, policy_to_json(proxy.policy()));
  }));
  TRY_STATUS(router.add("PUT", "/policy", [&proxy](const http::HttpRequest& req) {
    auto body = http::parse_json_object(req.body, {"allow_hosts", "deny_hosts"});
    if (!body.ok()) return http::error_response(body.error());
    auto policy = policy_from_json(*body, "policy");
    if (!policy.ok()) return http::error_response(policy.error());
    proxy.set_policy(*policy);
    return http::json_response(200, policy_to_json(*policy));
  }));
  return router.add("GET", "/stats", [&proxy](const http::HttpRequest&) {
    return http::json_response(200, stats_to_json(proxy.stats()));
  });
}

}  // namespace carapace::egress
