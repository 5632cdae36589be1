#include "daemon/api/api_common.h"

#include <chrono>

#include "daemon/core/json_log.h"

namespace carapace::service {

using nlohmann::json;

http::HttpResponse api_error_response(const ApiError& e) {
  return http::error_response(e.code, e.message);
}

http::HttpResponse api_no_content(const ApiStatus& s) {
  if (!s.ok()) return api_error_response(s.error());
  return http::HttpResponse{204, {}, {}};
}

ApiResult<json> json_body(const http::HttpRequest& req, bool empty_ok) {
  if (req.body.empty()) {
    if (empty_ok) return json::object();
    return bad_request("a JSON object body is required");
  }
  auto parsed = http::parse_json(req.body);
  if (!parsed.ok()) return bad_request(parsed.error().message);
  if (!parsed->is_object()) return bad_request("the body must be a JSON object");
  return std::move(*parsed);
}

namespace {

void log_request(SandboxService& svc, const http::HttpRequest& req, int status,
                 std::chrono::steady_clock::time_point start) {
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  svc.metrics().count_request(status);
  json fields = {{"method", req.method},
                 {"path", req.path},
                 {"status", status},
                 {"ms", static_cast<int64_t>(ms * 10) / 10.0}};
  if (req.transport == http::Transport::kTcp) fields["transport"] = "tcp";
  json_log(status >= 500 ? "error" : "info", "request", fields);
}

}  // namespace

Status add_route(http::Router& r, SandboxService& svc, const char* method, const char* pattern,
                 http::SimpleHandler h, http::RouteOptions options) {
  return r.add(
      method, pattern,
      [&svc, h = std::move(h)](const http::HttpRequest& req) {
        auto start = std::chrono::steady_clock::now();
        http::HttpResponse resp = h(req);
        log_request(svc, req, resp.status, start);
        return resp;
      },
      options);
}

Status add_stream_route(http::Router& r, SandboxService& svc, const char* method,
                        const char* pattern, http::Handler h, http::RouteOptions options) {
  return r.add_streaming(
      method, pattern,
      [&svc, h = std::move(h)](http::HttpRequest& req, http::ResponseWriter& w) {
        auto start = std::chrono::steady_clock::now();
        h(req, w);
        log_request(svc, req, w.status() ? w.status() : 500, start);
      },
      options);
}

Status add_all_routes(http::Router& r, SandboxService& svc) {
  TRY_STATUS(add_service_routes(r, svc));
  TRY_STATUS(add_template_routes(r, svc));
  TRY_STATUS(add_sandbox_routes(r, svc));
  TRY_STATUS(add_agent_routes(r, svc));
  TRY_STATUS(add_document_routes(r, svc));
  return ok_status();
}

ApiError agent_api_error(const Error& e) {
  std::string code = agent_error_code(e);
  std::string msg = e.describe();
  if (code == "not_found") return not_found(msg);
  if (code == "too_large") return too_large(msg);
  if (code == "path_refused" || code == "not_regular_file" || code == "not_directory" ||
      code == "is_directory" || code == "exists" || code == "permission_denied" ||
      code == "bad_request")
    return bad_request(msg);
  if (code == "busy") return unavailable(msg);
  if (code == "no_space") return insufficient_storage(msg);
  return internal("sandbox agent: " + msg);
}

}  // namespace carapace::service
