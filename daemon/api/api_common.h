// Shared pieces of the daemon's HTTP routes (api_*.cpp): every route is registered through
// add_route()/add_stream_route(), which log one JSON line per request (method, path, status, ms)
// and count it for carapace_http_requests_total.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/http/json_util.h"
#include "common/http/response_writer.h"
#include "common/http/router.h"
#include "daemon/api/view_json.h"
#include "daemon/core/api_result.h"
#include "daemon/core/request_json.h"
#include "daemon/core/sandbox_service.h"

namespace carapace::service {

http::HttpResponse api_error_response(const ApiError& e);

// 200 (or `status`) with render(value), or the error's status.
template <typename T, typename Render>
http::HttpResponse api_answer(const ApiResult<T>& r, Render render, int status = 200) {
  if (!r.ok()) return api_error_response(r.error());
  return http::json_response(status, render(r.value()));
}
// The same for a view (view_json.h).
template <typename T>
http::HttpResponse api_view(const ApiResult<T>& r, int status = 200) {
  return api_answer(
      r, [](const T& v) { return to_json(v); }, status);
}
// 204 or the error's status.
http::HttpResponse api_no_content(const ApiStatus& s);

// The request's JSON object; an empty body is `{}` when `empty_ok`.
ApiResult<nlohmann::json> json_body(const http::HttpRequest& req, bool empty_ok);
// The body as a typed request (request_json.h), or the 400 that names what is wrong.
template <typename Request>
ApiResult<Request> typed_body(const http::HttpRequest& req, bool empty_ok,
                              ApiResult<Request> (*parse)(const nlohmann::json&)) {
  nlohmann::json body = TRY(json_body(req, empty_ok));
  return parse(body);
}

Status add_route(http::Router& r, SandboxService& svc, const char* method, const char* pattern,
                 http::SimpleHandler h, http::RouteOptions options = {});
Status add_stream_route(http::Router& r, SandboxService& svc, const char* method,
                        const char* pattern, http::Handler h, http::RouteOptions options = {});

// The route groups (health, metrics and templates in api_templates.cpp; api_sandboxes.cpp,
// api_agent.cpp, api_documents.cpp).
Status add_service_routes(http::Router& r, SandboxService& svc);
Status add_template_routes(http::Router& r, SandboxService& svc);
Status add_sandbox_routes(http::Router& r, SandboxService& svc);
Status add_agent_routes(http::Router& r, SandboxService& svc);
Status add_document_routes(http::Router& r, SandboxService& svc);
// All of them.
Status add_all_routes(http::Router& r, SandboxService& svc);

// An agent error as the API's error: not_found → 404, bad paths and arguments → 400, too_large →
// 413, anything else (a lost connection, a guest failure) → 502-like 500.
ApiError agent_api_error(const Error& e);

}  // namespace carapace::service
