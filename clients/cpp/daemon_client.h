// A client of the sandbox daemon's REST API (`carapace serve`, docs/api.md) over its Unix socket,
// shared by `carapace sandbox` and `carapace mcp`. One request per connection: the CLI makes a
// handful of calls, and a fresh connection cannot inherit a broken one's state.
//
// Errors: an API error document becomes an Error whose message is the API's own one-line message;
// 4xx answers are ErrorKind::kInvalidInput (the caller asked for something wrong), 5xx and
// transport failures ErrorKind::kHost.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/http/http_client.h"

namespace carapace::sandbox {

// Where clients look for the daemon when neither --socket nor $CARAPACE_SOCKET says.
inline constexpr char kDefaultSocket[] = "/run/carapace.sock";

// `flag` when set, else $CARAPACE_SOCKET when set, else kDefaultSocket.
std::string resolve_socket(const std::string& flag);

struct ExecRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string cwd;
  std::optional<std::string> stdin_data;
  uint64_t timeout_ms = 0;  // 0: the daemon's default
};

struct ExecResult {
  std::optional<int> exit_code;  // absent when a signal ended the command
  std::optional<int> signal;
  std::string stdout_data;  // buffered exec only (a stream hands output to the callbacks)
  std::string stderr_data;
  bool timed_out = false;
  bool truncated = false;
  uint64_t duration_ms = 0;
};

// One entry of `network.credentials` (docs/api.md, "Credentials"): the proxy puts `secret` into
// the requests for `hosts`, in the header template or the query parameter; the sandbox sees a
// sentinel in $env instead. Exactly one of header and query is set.
struct CredentialRequest {
  std::vector<std::string> hosts;
  std::string header;  // "Authorization: Bearer {secret}"
  std::string query;   // a query parameter's name
  std::string secret;
  std::string env;

  bool operator==(const CredentialRequest&) const = default;
};

// One entry of `network.upstreams`: plain HTTP to `alias` inside the sandbox, verified TLS to
// `origin` ("https://api.example.com[:port]") from the proxy.
struct UpstreamRequest {
  std::string alias;
  std::string origin;

  bool operator==(const UpstreamRequest&) const = default;
};

// A sandbox's egress policy: the API's `network` object (docs/api.md, "Egress") of a create,
// a fork or PUT /sandboxes/{id}/network.
struct NetworkRequest {
  std::vector<std::string> allow_hosts;
  std::vector<std::string> deny_hosts;
  std::optional<bool> internet;  // unset: the daemon's default (true iff allow_hosts is non-empty)
  std::vector<CredentialRequest> credentials;
  std::vector<UpstreamRequest> upstreams;

  bool empty() const {
    return allow_hosts.empty() && deny_hosts.empty() && !internet && credentials.empty() &&
           upstreams.empty();
  }
  // Whether the daemon would give this policy a way out: internet on, by default with rules.
  bool has_internet() const { return internet.value_or(!allow_hosts.empty()); }
};
// Only the members given: the daemon's defaults apply to the rest.
nlohmann::json network_json(const NetworkRequest& network);

// The exit status a shell would report: the code, 128+signal, 124 after a timeout.
int exit_status_of(const ExecResult& r);
// The exec result object of docs/api.md (also the `exit` event's data).
Result<ExecResult> parse_exec_result(const nlohmann::json& j);
nlohmann::json exec_request_json(const ExecRequest& req, bool stream);
// An error answer (status >= 300) as an Error carrying the API's message.
Error api_error(const http::HttpResponse& response);

using OutputCallback = std::function<void(std::string_view bytes)>;

class DaemonClient {
 public:
  explicit DaemonClient(std::string socket_path) : socket_(std::move(socket_path)) {}

  const std::string& socket_path() const { return socket_; }
  // How long any one wait for response bytes may last (template builds and long commands need
  // more than the default 30 s).
  void set_wait_timeout(std::chrono::milliseconds t) { wait_timeout_ = t; }

  // JSON calls: the parsed 2xx body (null for 204 or an empty body).
  Result<nlohmann::json> get(std::string_view target);
  Result<nlohmann::json> post(std::string_view target, const nlohmann::json& body);
  Result<nlohmann::json> put(std::string_view target, const nlohmann::json& body);
  Result<nlohmann::json> del(std::string_view target);

  // PUT /sandboxes/{id}/network: the sandbox's view with its new policy.
  Result<nlohmann::json> set_network(std::string_view id, const NetworkRequest& network);

  // `parents`: create missing parent folders.
  Result<nlohmann::json> put_file(std::string_view id, std::string_view path, std::string_view data,
                                  bool parents = false);
  Result<std::string> get_file(std::string_view id, std::string_view path);
  // Buffered when both callbacks are empty, else streamed (SSE) into them.
  Result<ExecResult> exec(std::string_view id, const ExecRequest& req,
                          const OutputCallback& on_stdout = nullptr,
                          const OutputCallback& on_stderr = nullptr);
  // The document's bytes.
  Result<std::string> document(std::string_view id, const nlohmann::json& spec,
                               std::string_view format);

  // Any call, raw: the response whatever its status.
  Result<http::HttpResponse> send(std::string_view method, std::string_view target,
                                  std::string_view body, std::string_view content_type);

 private:
  Result<nlohmann::json> json_call(std::string_view method, std::string_view target,
                                   std::string_view body);
  http::ClientOptions options() const;

  std::string socket_;
  std::chrono::milliseconds wait_timeout_{60'000};
};

// "/sandboxes/<id>" with the id percent-encoded; `suffix` appended as is.
std::string sandbox_target(std::string_view id, std::string_view suffix = {});

}  // namespace carapace::sandbox
