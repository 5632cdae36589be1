#include "egress/credential_routes.h"

#include <string>
#include <vector>

#include "common/http/json_util.h"
#include "egress/credentials/credential_spec.h"

namespace carapace::egress {
namespace {

Error invalid(std::string what) {
  return as_invalid_input(make_error(std::move(what)));
}

}  // namespace

Result<ProxyCredentials> proxy_credentials_from_json(const nlohmann::json& body) {
  auto list = body.find("credentials");
  if (list == body.end() || !list->is_array())
    return invalid("credentials is required and must be an array");
  std::vector<CredentialSpec> specs;
  std::vector<std::string> sentinels;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string where = "credentials[" + std::to_string(i) + "]";
    nlohmann::json entry = (*list)[i];
    if (!entry.is_object()) return invalid(where + " must be an object");
    // The sentinel is the caller's: the daemon made it once for the sandbox's environment, and
    // it outlives rotations of the secret and restarts of this proxy.
    auto sentinel = entry.find("sentinel");
    if (sentinel == entry.end() || !sentinel->is_string())
      return invalid(where + ".sentinel is required and must be a string");
    sentinels.push_back(sentinel->get<std::string>());
    entry.erase("sentinel");
    specs.push_back(TRY(credential_from_json(entry, where)));
  }
  ProxyCredentials out;
  out.set = TRY(CredentialSet::with_sentinels(std::move(specs), sentinels));
  auto upstreams = body.find("upstreams");
  if (upstreams != body.end()) out.origins = TRY(origin_aliases_from_json(*upstreams, "upstreams"));
  return out;
}

nlohmann::json proxy_credentials_to_json(const ProxyCredentials& credentials) {
  return {{"credentials", credentials.set.to_json()},
          {"upstreams", origin_aliases_to_json(credentials.origins)}};
}

Status add_credential_routes(http::Router& router, EgressProxy& proxy) {
  // The CA certificate only: the sandbox's trust for the terminated hosts. Its key stays here.
  TRY_STATUS(router.add("GET", "/ca", [&proxy](const http::HttpRequest&) {
    const std::string pem = proxy.ca_pem();
    if (pem.empty()) return http::error_response(503, "this proxy has no CA (see its log)");
    return http::json_response(200, nlohmann::json{{"cert_pem", pem}});
  }));
  TRY_STATUS(router.add("GET", "/credentials", [&proxy](const http::HttpRequest&) {
    return http::json_response(200, proxy_credentials_to_json(*proxy.credentials()));
  }));
  return router.add("PUT", "/credentials", [&proxy](const http::HttpRequest& req) {
    auto body = http::parse_json_object(req.body, {"credentials", "upstreams"});
    if (!body.ok()) {
      // The JSON parser's message quotes the text it stopped at, which may be part of a secret.
      const std::string& m = body.error().message;
      return http::error_response(
          400, m.starts_with("malformed JSON") && m.find("duplicate field") == std::string::npos
                   ? "malformed JSON in the credentials (where is not said: it may be in a secret)"
                   : m);
    }
    auto parsed = proxy_credentials_from_json(*body);
    if (!parsed.ok()) return http::error_response(parsed.error());
    nlohmann::json view = proxy_credentials_to_json(*parsed);
    proxy.set_credentials(std::move(*parsed));
    return http::json_response(200, view);
  });
}

}  // namespace carapace::egress
