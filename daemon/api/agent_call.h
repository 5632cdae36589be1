// Calls into a sandbox's agent on behalf of one HTTP request. The connection is cut (which makes
// the agent kill a running exec, common/agent/PROTOCOL.md) as soon as the HTTP client goes away or
// the server is stopping, so an abandoned request never leaves a command running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent/agent_client.h"
#include "common/http/response_writer.h"
#include "daemon/core/api_result.h"

namespace carapace::service {

// Watches `w` while it lives; shuts `agent_fd` down when the HTTP side is cancelled.
class CancelWatch {
 public:
  CancelWatch(const http::ResponseWriter& w, int agent_fd);
  ~CancelWatch();
  CancelWatch(const CancelWatch&) = delete;
  CancelWatch& operator=(const CancelWatch&) = delete;
  bool fired() const { return fired_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

struct ExecRequest {
  std::vector<std::string> argv;
  AgentExecOptions options;
  bool stream = false;
};

// The body of POST /sandboxes/{id}/exec (docs/api.md); the sandbox's env goes under the
// request's.
ApiResult<ExecRequest> parse_exec_request(
    const nlohmann::json& body,
    const std::vector<std::pair<std::string, std::string>>& sandbox_env);

// The final object of an exec: exit_code/signal/timed_out/truncated/duration_ms.
nlohmann::json exec_result_json(const AgentExecResult& r);

}  // namespace carapace::service
