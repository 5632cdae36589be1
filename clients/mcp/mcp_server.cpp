#include "clients/mcp/mcp_server.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/http/json_util.h"

namespace carapace::mcp {
namespace {

using nlohmann::json;

// Versions whose tool messages are what this server speaks; a client asking for one of them gets
// it echoed, any other gets ours (the client then decides whether to go on).
bool supported_version(const std::string& v) {
  return v == "2024-11-05" || v == "2025-03-26" || v == "2025-06-18";
}

json error_message(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

// Dumps without throwing on invalid UTF-8 (file contents, command output).
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string too_long() {
  return dump(error_message(
      nullptr, kInvalidRequest,
      "Invalid Request: message longer than " + std::to_string(kMaxLineBytes) + " bytes"));
}

Status write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error("write");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return ok_status();
}

}  // namespace

std::optional<std::string> McpServer::handle_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.remove_suffix(1);
  if (line.empty()) return std::nullopt;  // blank lines carry nothing
  auto parsed = http::parse_json(line);
  if (!parsed.ok())
    return dump(error_message(nullptr, kParseError, "Parse error: " + parsed.error().message));
  const json& msg = *parsed;
  if (!msg.is_object())
    return dump(error_message(nullptr, kInvalidRequest,
                              msg.is_array() ? "Invalid Request: batches are not supported"
                                             : "Invalid Request: not a JSON object"));
  // A response to a request of ours (we send none) or anything without a method: nothing to say.
  auto method_it = msg.find("method");
  bool has_id = msg.contains("id");
  json id = has_id ? msg["id"] : json(nullptr);
  if (has_id && !id.is_string() && !id.is_number_integer() && !id.is_null())
    return dump(error_message(nullptr, kInvalidRequest,
                              "Invalid Request: id must be a string or an integer"));
  if (method_it == msg.end()) {
    if (msg.contains("result") || msg.contains("error")) return std::nullopt;
    return dump(error_message(id, kInvalidRequest, "Invalid Request: no method"));
  }
  if (msg.value("jsonrpc", json()) != "2.0")
    return has_id ? std::optional(dump(error_message(id, kInvalidRequest,
                                                     "Invalid Request: jsonrpc must be \"2.0\"")))
                  : std::nullopt;
  if (!method_it->is_string())
    return dump(error_message(id, kInvalidRequest, "Invalid Request: method must be a string"));
  std::string method = method_it->get<std::string>();
  json params = msg.value("params", json::object());
  if (!params.is_object() && !params.is_array()) {
    if (!has_id) return std::nullopt;
    return dump(error_message(id, kInvalidParams, "Invalid params: params must be an object"));
  }

  auto outcome = [&]() -> RpcOutcome {
    try {
      return dispatch(method, params);
    } catch (const std::exception& e) {  // a library throw must not end the server
      return RpcOutcome::error(kInternalError, std::string("Internal error: ") + e.what());
    }
  };
  RpcOutcome out = outcome();
  if (!has_id) return std::nullopt;  // a notification is never answered, even with an error
  if (out.error_code != 0) return dump(error_message(id, out.error_code, out.error_message));
  return dump({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(out.result)}});
}

RpcOutcome McpServer::dispatch(const std::string& method, const json& params) {
  if (method == "initialize") {
    if (!params.is_object())
      return RpcOutcome::error(kInvalidParams, "initialize: params must be an object");
    std::string version = kProtocolVersion;
    if (auto v = params.find("protocolVersion");
        v != params.end() && v->is_string() && supported_version(v->get<std::string>()))
      version = v->get<std::string>();
    return RpcOutcome::ok(
        {{"protocolVersion", version},
         {"capabilities", {{"tools", json::object()}}},
         {"serverInfo", {{"name", "carapace"}, {"version", options_.server_version}}},
         {"instructions",
          "Tools run inside one disposable carapace sandbox; paths are relative "
          "to its work directory /work."}});
  }
  if (method == "ping") return RpcOutcome::ok(json::object());
  if (method == "tools/list") return RpcOutcome::ok({{"tools", tool_definitions(options_)}});
  if (method == "tools/call") {
    if (!params.is_object())
      return RpcOutcome::error(kInvalidParams, "tools/call: params must be an object");
    return call_tool(ops_, options_, params, documents_);
  }
  if (method.rfind("notifications/", 0) == 0) return RpcOutcome::ok(json::object());
  return RpcOutcome::error(kMethodNotFound, "Method not found: " + method);
}

Status McpServer::serve(int in_fd, int out_fd, const std::atomic<bool>& stop) {
  std::string buffer;
  bool skipping = false;  // inside a line that was too long
  size_t scanned = 0;     // bytes at the front of buffer known to hold no newline
  char chunk[64 * 1024];
  bool eof = false;
  while (!eof && !stop.load()) {
    pollfd p{in_fd, POLLIN, 0};
    int r = ::poll(&p, 1, 250);
    if (r < 0) {
      if (errno == EINTR) continue;
      return sys_error("poll stdin");
    }
    if (r == 0) continue;
    ssize_t n = ::read(in_fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return sys_error("read stdin");
    }
    if (n == 0) {
      eof = true;
      if (!skipping && !buffer.empty()) buffer.push_back('\n');  // a last line without newline
    } else {
      buffer.append(chunk, static_cast<size_t>(n));
    }
    size_t start = 0;
    for (;;) {
      size_t nl = buffer.find('\n', std::max(start, scanned));
      if (nl == std::string::npos) break;
      std::string_view line = std::string_view(buffer).substr(start, nl - start);
      start = nl + 1;
      std::optional<std::string> reply;
      if (skipping) {
        skipping = false;  // the end of a line already refused
      } else if (line.size() > kMaxLineBytes) {
        reply = too_long();
      } else {
        reply = handle_line(line);
      }
      if (reply) {
        reply->push_back('\n');
        TRY_STATUS(write_all(out_fd, *reply));
      }
    }
    buffer.erase(0, start);
    scanned = buffer.size();
    if (skipping) {
      buffer.clear();
      scanned = 0;
    } else if (buffer.size() > kMaxLineBytes) {  // refused now; the rest is skipped unread
      buffer.clear();
      scanned = 0;
      skipping = true;
      std::string reply = too_long() + "\n";
      TRY_STATUS(write_all(out_fd, reply));
    }
  }
  return ok_status();
}

}  // namespace carapace::mcp
