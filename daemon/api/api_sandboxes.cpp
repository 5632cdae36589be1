// The sandbox routes: create, list, get, delete, pause, resume, fork, timeout, network.
#include "daemon/api/api_common.h"

namespace carapace::service {

using nlohmann::json;

namespace {

using IdCall = ApiResult<SandboxView> (SandboxService::*)(const std::string&);

// Pause and resume take no body; an empty one or `{}` is accepted.
http::SimpleHandler id_route(SandboxService& svc, IdCall call) {
  return [&svc, call](const http::HttpRequest& req) {
    auto body = json_body(req, true);
    if (!body) return api_error_response(body.error());
    if (!body->empty())
      return api_error_response(bad_request(body->begin().key() + ": unknown field"));
    return api_view((svc.*call)(std::string(req.param("id"))));
  };
}

ApiResult<std::vector<SandboxView>> fork(SandboxService& svc, const http::HttpRequest& req) {
  ForkRequest fork = TRY(typed_body(req, true, parse_fork_request));
  return svc.fork_sandbox(std::string(req.param("id")), fork);
}

ApiResult<SandboxView> set_timeout(SandboxService& svc, const http::HttpRequest& req) {
  TimeoutRequest timeout = TRY(typed_body(req, false, parse_timeout_request));
  return svc.set_timeout(std::string(req.param("id")), timeout);
}

ApiResult<NetworkSpec> parse_network_body(const json& body) {
  return parse_network_spec(body, "network");
}

ApiResult<SandboxView> set_network(SandboxService& svc, const http::HttpRequest& req) {
  NetworkSpec network = TRY(typed_body(req, false, parse_network_body));
  return svc.set_network(std::string(req.param("id")), network);
}

}  // namespace

Status add_sandbox_routes(http::Router& r, SandboxService& svc) {
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes", [&svc](const http::HttpRequest& req) {
    auto request = typed_body(req, false, parse_sandbox_request);
    if (!request) return api_error_response(request.error());
    return api_view(svc.create_sandbox(*request), 201);
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/sandboxes", [&svc](const http::HttpRequest&) {
    return http::json_response(200, {{"sandboxes", to_json(svc.list_sandboxes())}});
  }));
  TRY_STATUS(add_route(r, svc, "GET", "/sandboxes/{id}", [&svc](const http::HttpRequest& req) {
    return api_view(svc.get_sandbox(std::string(req.param("id"))));
  }));
  TRY_STATUS(add_route(r, svc, "DELETE", "/sandboxes/{id}", [&svc](const http::HttpRequest& req) {
    return api_no_content(svc.delete_sandbox(std::string(req.param("id"))));
  }));
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes/{id}/pause",
                       id_route(svc, &SandboxService::pause_sandbox)));
  TRY_STATUS(add_route(r, svc, "POST", "/sandboxes/{id}/resume",
                       id_route(svc, &SandboxService::resume_sandbox)));
  TRY_STATUS(
      add_route(r, svc, "POST", "/sandboxes/{id}/fork", [&svc](const http::HttpRequest& req) {
        return api_answer(
            fork(svc, req),
            [](const auto& children) {
              return json{{"children", to_json(children)}};
            },
            201);
      }));
  TRY_STATUS(
      add_route(r, svc, "POST", "/sandboxes/{id}/timeout",
                [&svc](const http::HttpRequest& req) { return api_view(set_timeout(svc, req)); }));
  TRY_STATUS(
      add_route(r, svc, "PUT", "/sandboxes/{id}/network",
                [&svc](const http::HttpRequest& req) { return api_view(set_network(svc, req)); }));
  return ok_status();
}

}  // namespace carapace::service
