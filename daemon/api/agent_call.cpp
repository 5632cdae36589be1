#include "daemon/api/agent_call.h"

#include <sys/socket.h>

#include "common/agent/wire.h"
#include "daemon/core/request_json.h"

namespace carapace::service {

using nlohmann::json;

CancelWatch::CancelWatch(const http::ResponseWriter& w, int agent_fd) {
  thread_ = std::thread([this, &w, agent_fd] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (done_) break;
      if (w.cancelled()) {
        fired_ = true;
        ::shutdown(agent_fd, SHUT_RDWR);  // the agent sees the close and kills the exec
        break;
      }
    }
  });
}

CancelWatch::~CancelWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

namespace {

constexpr FieldRange kExecTimeoutRange{0, static_cast<int64_t>(agent::kMaxTimeoutMs)};
constexpr FieldRange kExecOutputRange{1, static_cast<int64_t>(agent::kMaxOutputLimitBytes)};

}  // namespace

ApiResult<ExecRequest> parse_exec_request(
    const json& body, const std::vector<std::pair<std::string, std::string>>& sandbox_env) {
  ExecRequest req;
  req.options.max_output = 1 << 20;
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& [k, v] : body.items()) {
    if (k == "argv") {
      if (!v.is_array() || v.empty()) return bad_request("argv: must be a non-empty array");
      if (v.size() > agent::kMaxArgvEntries) return bad_request("argv: too many entries");
      for (const auto& a : v) {
        if (!a.is_string()) return bad_request("argv: entries must be strings");
        std::string s = a.get<std::string>();
        if (s.find('\0') != std::string::npos) return bad_request("argv: an entry holds NUL");
        req.argv.push_back(std::move(s));
      }
    } else if (k == "env") {
      auto e = parse_env(v, "env");
      if (!e) return e.error();
      env = std::move(*e);
    } else if (k == "cwd") {
      if (!v.is_string()) return bad_request("cwd: must be a string");
      req.options.cwd = v.get<std::string>();
    } else if (k == "stdin") {
      if (!v.is_string()) return bad_request("stdin: must be a string");
      req.options.stdin_data = v.get<std::string>();
    } else if (k == "timeout_ms") {
      req.options.timeout_ms = TRY(integer_in(v, "timeout_ms", kExecTimeoutRange));
    } else if (k == "max_output") {
      req.options.max_output = TRY(integer_in(v, "max_output", kExecOutputRange));
    } else if (k == "stream") {
      if (!v.is_boolean()) return bad_request("stream: must be true or false");
      req.stream = v.get<bool>();
    } else {
      return bad_request(k + ": unknown field");
    }
  }
  if (req.argv.empty()) return bad_request("argv: required");
  req.options.env = merge_env(sandbox_env, env);
  return req;
}

json exec_result_json(const AgentExecResult& r) {
  return {{"exit_code", r.exited ? json(r.exit_code) : json(nullptr)},
          {"signal", r.exited ? json(nullptr) : json(r.signal)},
          {"timed_out", r.timed_out},
          {"truncated", r.truncated},
          {"duration_ms", r.duration_ms}};
}

}  // namespace carapace::service
