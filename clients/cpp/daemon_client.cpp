#include "clients/cpp/daemon_client.h"

#include <cstdlib>

#include "clients/cpp/sse_parser.h"
#include "common/agent/base64.h"
#include "common/http/error_code.h"
#include "common/http/json_util.h"
#include "common/http/query.h"

namespace carapace::sandbox {
namespace {

using nlohmann::json;

// A JSON number that fits an int, or nullopt for null/absent.
Result<std::optional<int>> optional_int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<int>();
  if (!it->is_number_integer())
    return make_error(std::string("exec result: '") + key + "' is not an integer");
  return std::optional<int>(it->get<int>());
}

}  // namespace

std::string resolve_socket(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("CARAPACE_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  return kDefaultSocket;
}

int exit_status_of(const ExecResult& r) {
  if (r.timed_out) return 124;
  if (r.signal) return 128 + *r.signal;
  return r.exit_code.value_or(1);
}

Result<ExecResult> parse_exec_result(const json& j) {
  if (!j.is_object()) return make_error("exec result: not a JSON object");
  ExecResult r;
  r.exit_code = TRY(optional_int(j, "exit_code"));
  r.signal = TRY(optional_int(j, "signal"));
  auto flag = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  // Not j.value("timed_out", false): that throws when the member is there but not a boolean.
  if (!r.exit_code && !r.signal && !flag("timed_out"))
    return make_error("exec result: neither exit_code nor signal");
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  r.stdout_data = text("stdout");
  r.stderr_data = text("stderr");
  r.timed_out = flag("timed_out");
  r.truncated = flag("truncated");
  if (auto it = j.find("duration_ms"); it != j.end() && it->is_number_integer() && *it >= 0)
    r.duration_ms = it->get<uint64_t>();
  return r;
}

json exec_request_json(const ExecRequest& req, bool stream) {
  json body = {{"argv", req.argv}, {"stream", stream}};
  if (!req.env.empty()) body["env"] = req.env;
  if (!req.cwd.empty()) body["cwd"] = req.cwd;
  if (req.stdin_data) body["stdin"] = *req.stdin_data;
  if (req.timeout_ms != 0) body["timeout_ms"] = req.timeout_ms;
  return body;
}

json network_json(const NetworkRequest& network) {
  json j = json::object();
  if (!network.allow_hosts.empty()) j["allow_hosts"] = network.allow_hosts;
  if (!network.deny_hosts.empty()) j["deny_hosts"] = network.deny_hosts;
  if (network.internet) j["internet"] = *network.internet;
  for (const CredentialRequest& c : network.credentials) {
    json entry = {{"hosts", c.hosts}, {"secret", c.secret}, {"env", c.env}};
    if (!c.header.empty()) entry["header"] = c.header;
    if (!c.query.empty()) entry["query"] = c.query;
    j["credentials"].push_back(std::move(entry));
  }
  for (const UpstreamRequest& u : network.upstreams)
    j["upstreams"].push_back({{"alias", u.alias}, {"origin", u.origin}});
  return j;
}

Error api_error(const http::HttpResponse& response) {
  std::string message;
  auto parsed = http::parse_json(response.body);
  if (parsed.ok() && parsed->is_object()) {
    auto err = parsed->find("error");
    if (err != parsed->end() && err->is_object()) {
      auto m = err->find("message");
      if (m != err->end() && m->is_string()) message = m->get<std::string>();
    }
  }
  if (message.empty())
    message = "HTTP " + std::to_string(response.status) + " " +
              std::string(http::reason_phrase(response.status));
  Error e = make_error(std::move(message));
  if (response.status >= 400 && response.status < 500) e = as_invalid_input(std::move(e));
  return e;
}

std::string sandbox_target(std::string_view id, std::string_view suffix) {
  return "/sandboxes/" + http::percent_encode(id) + std::string(suffix);
}

http::ClientOptions DaemonClient::options() const {
  http::ClientOptions o;
  o.timeout = wait_timeout_;
  return o;
}

Result<http::HttpResponse> DaemonClient::send(std::string_view method, std::string_view target,
                                              std::string_view body,
                                              std::string_view content_type) {
  http::HttpHeaders headers;
  if (!content_type.empty()) headers.set("Content-Type", std::string(content_type));
  auto r = http::http_request(socket_, method, target, body, headers, options());
  if (!r.ok()) {
    Error e = r.take_error();
    e.message = "daemon at " + socket_ + ": " + e.message;
    return e;
  }
  return r;
}

Result<json> DaemonClient::json_call(std::string_view method, std::string_view target,
                                     std::string_view body) {
  http::HttpResponse r = TRY(send(method, target, body, body.empty() ? "" : "application/json"));
  if (r.status < 200 || r.status >= 300) return api_error(r);
  if (r.body.empty()) return json();
  auto parsed = http::parse_json(r.body);
  if (!parsed.ok()) return make_error("daemon sent invalid JSON: " + parsed.error().message);
  return std::move(*parsed);
}

Result<json> DaemonClient::get(std::string_view target) {
  return json_call("GET", target, {});
}
Result<json> DaemonClient::post(std::string_view target, const json& body) {
  return json_call("POST", target, body.dump());
}
Result<json> DaemonClient::put(std::string_view target, const json& body) {
  return json_call("PUT", target, body.dump());
}
Result<json> DaemonClient::del(std::string_view target) {
  return json_call("DELETE", target, {});
}

Result<json> DaemonClient::set_network(std::string_view id, const NetworkRequest& network) {
  return put(sandbox_target(id, "/network"), network_json(network));
}

Result<json> DaemonClient::put_file(std::string_view id, std::string_view path,
                                    std::string_view data, bool parents) {
  std::string target = sandbox_target(id, "/files?path=" + http::percent_encode(path));
  if (parents) target += "&parents=true";
  http::HttpResponse r = TRY(send("PUT", target, data, "application/octet-stream"));
  if (r.status < 200 || r.status >= 300) return api_error(r);
  auto parsed = http::parse_json(r.body);
  if (!parsed.ok()) return json::object();
  return std::move(*parsed);
}

Result<std::string> DaemonClient::get_file(std::string_view id, std::string_view path) {
  std::string target = sandbox_target(id, "/files?path=" + http::percent_encode(path));
  http::HttpResponse r = TRY(send("GET", target, {}, {}));
  if (r.status < 200 || r.status >= 300) return api_error(r);
  return std::move(r.body);
}

Result<std::string> DaemonClient::document(std::string_view id, const json& spec,
                                           std::string_view format) {
  json body = {{"spec", spec}, {"format", format}};
  http::HttpResponse r =
      TRY(send("POST", sandbox_target(id, "/documents"), body.dump(), "application/json"));
  if (r.status < 200 || r.status >= 300) return api_error(r);
  return std::move(r.body);
}

Result<ExecResult> DaemonClient::exec(std::string_view id, const ExecRequest& req,
                                      const OutputCallback& on_stdout,
                                      const OutputCallback& on_stderr) {
  std::string target = sandbox_target(id, "/exec");
  bool stream = on_stdout || on_stderr;
  std::string body = exec_request_json(req, stream).dump();
  if (!stream) {
    json j = TRY(json_call("POST", target, body));
    return parse_exec_result(j);
  }
  http::HttpHeaders headers{{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
  SseParser parser;
  std::optional<ExecResult> result;
  std::optional<Error> failure;
  auto on_body = [&](std::string_view piece) {
    auto events = parser.feed(piece);
    if (!events.ok()) {
      failure = events.take_error();
      return false;
    }
    for (const SseEvent& ev : *events) {
      auto data = http::parse_json(ev.data);
      if (!data.ok() || !data->is_object()) {
        failure = make_error("exec stream: event '" + ev.event + "' holds no JSON object");
        return false;
      }
      if (ev.event == "exit") {
        auto r = parse_exec_result(*data);
        if (!r.ok()) {
          failure = r.take_error();
          return false;
        }
        result = std::move(*r);
        continue;
      }
      if (ev.event == "error") {  // a failure after the stream started: {"error": {code, ...}}
        std::string code;
        if (auto e = data->find("error"); e != data->end() && e->is_object())
          code = e->value("code", "");
        // The event carries only the code; its status is the one the table gives it.
        auto known = http::parse_error_code(code);
        int status = http::http_status(known ? *known : http::ErrorCode::kInternal);
        failure = api_error(http::HttpResponse{status, {}, ev.data});
        return false;
      }
      if (ev.event != "stdout" && ev.event != "stderr") continue;
      auto b64 = data->find("data");
      std::optional<std::string> bytes;
      if (b64 != data->end() && b64->is_string())
        bytes = agent::base64_decode(b64->get<std::string>());
      if (!bytes) {
        failure = make_error("exec stream: bad base64 in a " + ev.event + " event");
        return false;
      }
      const OutputCallback& cb = ev.event == "stdout" ? on_stdout : on_stderr;
      if (cb) cb(*bytes);
    }
    return true;
  };
  auto r = http::http_request_stream(socket_, "POST", target, body, headers, on_body, options());
  if (failure) return *failure;
  if (!r.ok()) {
    Error e = r.take_error();
    e.message = "daemon at " + socket_ + ": " + e.message;
    return e;
  }
  if (r->status < 200 || r->status >= 300) return api_error(*r);
  if (!result) return make_error("exec stream ended without an exit event");
  return std::move(*result);
}

}  // namespace carapace::sandbox
