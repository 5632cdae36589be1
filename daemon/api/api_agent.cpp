// Routes that go through a sandbox's agent: exec (JSON or Server-Sent Events) and files.
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "common/agent/base64.h"
#include "daemon/api/agent_call.h"
#include "daemon/api/api_common.h"

namespace carapace::service {

using nlohmann::json;

namespace {

bool wants_sse(const http::HttpRequest& req) {
  auto accept = req.headers.get("Accept");
  return accept && accept->find("text/event-stream") != std::string_view::npos;
}

// Runs the exec, writing output as SSE events; the exit (or error) is the last event.
void exec_streamed(AgentClient& client, const ExecRequest& req, http::ResponseWriter& w) {
  http::SseStream sse(w);
  if (!sse.open().ok()) return;
  bool client_gone = false;
  auto forward = [&](const char* event) {
    return [&, event](std::string_view bytes) {
      if (client_gone) return;
      json data = {{"data", agent::base64_encode(bytes)}};
      if (!sse.send(data.dump(), event).ok()) {
        client_gone = true;
        ::shutdown(client.fd(), SHUT_RDWR);  // the agent kills the command
      }
    };
  };
  auto result = [&] {
    CancelWatch watch(w, client.fd());
    return client.exec(req.argv, req.options, forward("stdout"), forward("stderr"));
  }();
  if (client_gone) return;
  if (!result.ok()) {
    ApiError e = agent_api_error(result.error());
    if (agent_error_code(result.error()) == "exec_failed") e = bad_request(e.message);
    (void)sse.send(
        json{{"error", {{"code", http::to_string(e.code)}, {"message", e.message}}}}.dump(),
        "error");
  } else {
    (void)sse.send(exec_result_json(*result).dump(), "exit");
  }
  (void)sse.close();
}

http::HttpResponse exec_buffered(AgentClient& client, const ExecRequest& req,
                                 http::ResponseWriter& w) {
  std::string out, err;
  auto result = [&] {
    CancelWatch watch(w, client.fd());
    return client.exec(
        req.argv, req.options, [&](std::string_view b) { out.append(b); },
        [&](std::string_view b) { err.append(b); });
  }();
  if (!result.ok()) {
    // A program that cannot be started is the caller's mistake (docs/api.md: 400).
    if (agent_error_code(result.error()) == "exec_failed")
      return api_error_response(bad_request(result.error().describe()));
    return api_error_response(agent_api_error(result.error()));
  }
  json j = exec_result_json(*result);
  j["stdout"] = std::move(out);
  j["stderr"] = std::move(err);
  return http::json_response(200, j);  // invalid UTF-8 is replaced with U+FFFD
}

ApiResult<AgentClient> connect_agent(const AgentTarget& t) {
  auto client = t.endpoint.connect();
  if (!client.ok())
    return internal("sandbox " + t.sandbox_id +
                    ": agent unreachable: " + client.error().describe());
  return std::move(*client);
}

ApiResult<std::string> query_path(const http::HttpRequest& req) {
  auto path = req.query.get("path");
  if (!path || path->empty()) return bad_request("path: query parameter required");
  return std::string(*path);
}

http::HttpResponse put_file(SandboxService& svc, const http::HttpRequest& req) {
  auto path = query_path(req);
  if (!path) return api_error_response(path.error());
  uint32_t mode = 0644;
  if (auto m = req.query.get("mode")) {
    char* end = nullptr;
    std::string s(*m);
    unsigned long v = std::strtoul(s.c_str(), &end, 8);
    if (s.empty() || *end != '\0' || v > 0777)
      return api_error_response(bad_request("mode: an octal permission from 0 to 0777"));
    mode = static_cast<uint32_t>(v);
  }
  bool parents = false;
  if (auto p = req.query.get("parents")) {
    if (*p == "true" || *p == "1") {
      parents = true;
    } else if (*p != "false" && *p != "0") {
      return api_error_response(bad_request("parents: true or false"));
    }
  }
  auto target = svc.agent_target(std::string(req.param("id")));
  if (!target) return api_error_response(target.error());
  auto client = connect_agent(*target);
  if (!client) return api_error_response(client.error());
  if (Status s = client->put_file(*path, req.body, mode, parents); !s.ok())
    return api_error_response(agent_api_error(s.error()));
  return http::json_response(200, {{"path", *path}, {"size", req.body.size()}});
}

// The file streams from the agent to the client chunk by chunk: the daemon holds one chunk at a
// time, whatever the file's size. Its size is checked first (413 before any byte); an agent error
// after the 200 went out (the file grew past the limit, the sandbox died) cuts the chunked
// response short, which the client sees as a truncated body rather than a complete file.
void get_file(SandboxService& svc, const http::HttpRequest& req, http::ResponseWriter& w) {
  auto path = query_path(req);
  if (!path) return (void)w.send(api_error_response(path.error()));
  auto target = svc.agent_target(std::string(req.param("id")));
  if (!target) return (void)w.send(api_error_response(target.error()));
  auto client = connect_agent(*target);
  if (!client) return (void)w.send(api_error_response(client.error()));
  const uint64_t limit = svc.config().max_upload_bytes;
  auto info = client->stat(*path);
  if (!info.ok()) return (void)w.send(api_error_response(agent_api_error(info.error())));
  if (info->type == "file" && info->size > limit)
    return (void)w.send(api_error_response(
        too_large("'" + *path + "' is larger than " + std::to_string(limit) + " bytes")));
  Status streamed = client->get_file_stream(*path, limit, [&](std::string_view chunk) -> Status {
    if (!w.started())
      TRY_STATUS(w.begin_stream(200, {{"Content-Type", "application/octet-stream"}}));
    return w.write_chunk(chunk);
  });
  if (!streamed.ok()) {
    if (!w.started()) return (void)w.send(api_error_response(agent_api_error(streamed.error())));
    w.abort_stream();  // the client sees the body cut short
    return;
  }
  if (!w.started() && !w.begin_stream(200, {{"Content-Type", "application/octet-stream"}}).ok())
    return;
  (void)w.finish();
}

http::HttpResponse list_files(SandboxService& svc, const http::HttpRequest& req) {
  std::string path = std::string(req.query.get("path").value_or("."));
  if (path.empty()) path = ".";
  auto target = svc.agent_target(std::string(req.param("id")));
  if (!target) return api_error_response(target.error());
  auto client = connect_agent(*target);
  if (!client) return api_error_response(client.error());
  auto entries = client->list(path);
  if (!entries.ok()) return api_error_response(agent_api_error(entries.error()));
  json list = json::array();
  for (const auto& e : *entries) {
    list.push_back({{"name", e.name},
                    {"type", e.type},
                    {"size", e.size},
                    {"mode", e.mode},
                    {"mtime", e.mtime}});
  }
  return http::json_response(200, {{"entries", list}, {"truncated", false}});
}

}  // namespace

Status add_agent_routes(http::Router& r, SandboxService& svc) {
  TRY_STATUS(add_stream_route(r, svc, "POST", "/sandboxes/{id}/exec",
                              [&svc](http::HttpRequest& req, http::ResponseWriter& w) {
                                auto body = json_body(req, false);
                                if (!body) return (void)w.send(api_error_response(body.error()));
                                auto target = svc.agent_target(std::string(req.param("id")));
                                if (!target)
                                  return (void)w.send(api_error_response(target.error()));
                                auto exec = parse_exec_request(*body, target->env);
                                if (!exec) return (void)w.send(api_error_response(exec.error()));
                                auto client = connect_agent(*target);
                                if (!client)
                                  return (void)w.send(api_error_response(client.error()));
                                if (exec->stream || wants_sse(req))
                                  return exec_streamed(*client, *exec, w);
                                (void)w.send(exec_buffered(*client, *exec, w));
                              }));
  http::RouteOptions upload;
  upload.max_body_bytes = svc.config().max_upload_bytes;
  TRY_STATUS(add_route(
      r, svc, "PUT", "/sandboxes/{id}/files",
      [&svc](const http::HttpRequest& req) { return put_file(svc, req); }, upload));
  TRY_STATUS(add_stream_route(
      r, svc, "GET", "/sandboxes/{id}/files",
      [&svc](http::HttpRequest& req, http::ResponseWriter& w) { get_file(svc, req, w); }));
  TRY_STATUS(add_route(r, svc, "GET", "/sandboxes/{id}/files/list",
                       [&svc](const http::HttpRequest& req) { return list_files(svc, req); }));
  return ok_status();
}

}  // namespace carapace::service
