// The sandbox routes: create, list, get, delete, pause, resume, fork, timeout.
#include "daemon/api/api_common.h"

namespace carapace::service {

using nlohmann::json;

namespace {

using IdCall = ApiResult<json> (SandboxService::*)(const std::string&);
using IdBodyCall = ApiResult<json> (SandboxService::*)(const std::string&, const json&);

// Pause and resume take no body; an empty one or `{}` is accepted.
http::SimpleHandler id_route(SandboxService& svc, IdCall call) {
  return [&svc, call](const http::HttpRequest& req) {
    auto body = json_body(req, true);
    if (!body) return api_error_response(body.error());
    if (!body->empty())
      return api_error_response(bad_request(body->begin().key() + ": unknown field"));
    return api_json((svc.*call)(std::string(req.param("id"))));
  };
}

http::SimpleHandler id_body_route(SandboxService& svc, IdBodyCall call, int status, bool empty_ok) {
  return [&svc, call, status, empty_ok](const http::HttpRequest& req) {
    auto body = json_body(req, empty_ok);
    if (!body) return api_error_response(body.error());
    return api_json((svc.*call)(std::string(req.param("id")), *body), status);
  };
}

}  // namespace

Status add_sandbox_routes(http::Router& r, SandboxService& svc) {
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes", [&svc](const http::HttpRequest& req) {
    auto body = json_body(req, false);
    if (!body) return api_error_response(body.error());
    return api_json(svc.create_sandbox(*body), 201);
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/sandboxes", [&svc](const http::HttpRequest&) {
    return http::json_response(200, svc.list_sandboxes());
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/sandboxes/{id}", [&svc](const http::HttpRequest& req) {
    return api_json(svc.get_sandbox(std::string(req.param("id"))));
  }));
  TRY_STATUS(add_route(r, svc, "DELETE", "/sandboxes/{id}", [&svc](const http::HttpRequest& req) {
    ApiStatus s = svc.delete_sandbox(std::string(req.param("id")));
    if (!s) return api_error_response(s.error());
    return http::HttpResponse{204, {}, {}};
  }));
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes/{id}/pause",
                       id_route(svc, &SandboxService::pause_sandbox)));
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes/{id}/resume",
                       id_route(svc, &SandboxService::resume_sandbox)));
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes/{id}/fork",
                       id_body_route(svc, &SandboxService::fork_sandbox, 201, true)));
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes/{id}/timeout",
                       id_body_route(svc, &SandboxService::set_timeout, 200, false)));
  return ok_status();
}

}  // namespace carapace::service
