// GET /health, GET /metrics and the template routes.
#include "daemon/api/api_common.h"

namespace carapace::service {

using nlohmann::json;

Status add_service_routes(http::Router& r, SandboxService& svc) {
  TRY_STATUS(add_route(r, svc, "GET", "/health", [&svc](const http::HttpRequest&) {
    return http::json_response(200, to_json(svc.health()));
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/metrics", [&svc](const http::HttpRequest&) {
    http::HttpResponse resp;
    resp.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    resp.body = svc.metrics_text();
    return resp;
  }));
  return ok_status();
}

Status add_template_routes(http::Router& r, SandboxService& svc) {
  TRY_STATUS(add_route(r, svc, "POST", "/templates", [&svc](const http::HttpRequest& req) {
    auto request = typed_body(req, false, parse_template_request);
    if (!request) return api_error_response(request.error());
    return api_view(svc.create_template(*request), 201);
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/templates", [&svc](const http::HttpRequest&) {
    return http::json_response(200, {{"templates", to_json(svc.list_templates())}});
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/templates/{id}", [&svc](const http::HttpRequest& req) {
    return api_view(svc.get_template(std::string(req.param("id"))));
  }));
  TRY_STATUS(add_route(r, svc, "DELETE", "/templates/{id}", [&svc](const http::HttpRequest& req) {
    return api_no_content(svc.delete_template(std::string(req.param("id"))));
  }));
  return ok_status();
}

}  // namespace carapace::service
