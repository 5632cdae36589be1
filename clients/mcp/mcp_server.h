// The Model Context Protocol server behind `carapace mcp`: JSON-RPC 2.0 over stdio, one message
// per line (MCP 2024-11-05 "stdio" transport), exposing one sandbox to an agent loop that runs
// outside it through four tools: run_command, write_file, read_file, generate_document; and a
// fifth, set_sandbox_network, only when the operator offers it (McpOptions::network_tool).
//
// Every input line is untrusted: malformed JSON, wrong types, unknown methods and oversized
// lines are answered with JSON-RPC errors (-32700, -32600, -32601, -32602), never a crash. Tool
// failures (the daemon refused, the command could not run) are tool results with isError: true,
// as MCP asks, so the model sees them. stdout carries only JSON-RPC; logs go to stderr.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "carapace/version.h"
#include "clients/cpp/daemon_client.h"
#include "common/base/result.h"

namespace carapace::mcp {

inline constexpr char kProtocolVersion[] = "2024-11-05";
// A longer line is refused (-32600) and skipped up to its newline.
inline constexpr size_t kMaxLineBytes = 48u << 20;
// Files and command output larger than this are not put into a tool result.
inline constexpr size_t kMaxResultBytes = 8u << 20;

// The sandbox the tools act on. The real one talks to the daemon (daemon_sandbox.h); tests use
// a fake.
class SandboxOps {
 public:
  virtual ~SandboxOps() = default;
  virtual Result<sandbox::ExecResult> run_command(const std::string& command,
                                                  const std::string& cwd, uint64_t timeout_ms) = 0;
  virtual Status write_file(const std::string& path, const std::string& data) = 0;
  virtual Result<std::string> read_file(const std::string& path) = 0;
  virtual Result<std::string> generate_document(const nlohmann::json& spec,
                                                const std::string& format) = 0;
  // Replaces the sandbox's egress policy: the sandbox's view (docs/api.md) with its network.
  virtual Result<nlohmann::json> set_network(const sandbox::NetworkRequest& network) = 0;
};

// What a method returns: a result, or a JSON-RPC error (code != 0).
struct RpcOutcome {
  nlohmann::json result;
  int error_code = 0;
  std::string error_message;
  static RpcOutcome ok(nlohmann::json r) { return RpcOutcome{std::move(r), 0, {}}; }
  static RpcOutcome error(int code, std::string message) {
    return RpcOutcome{nullptr, code, std::move(message)};
  }
};

// JSON-RPC 2.0 error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

struct McpOptions {
  std::string out_dir;  // generate_document saves here on the host; "" = return it inline
  std::string server_version = CARAPACE_VERSION;
  // Offer set_sandbox_network. Off by default: it lets the model choose where its own sandbox may
  // connect, which only the operator should be able to allow.
  bool network_tool = false;
};

class McpServer {
 public:
  McpServer(SandboxOps& ops, McpOptions options) : ops_(ops), options_(std::move(options)) {}

  // One message in; the response line (without '\n'), or nothing for a notification.
  std::optional<std::string> handle_line(std::string_view line);
  // Reads lines from `in_fd` and answers on `out_fd` until EOF, a write failure, or `stop`.
  Status serve(int in_fd, int out_fd, const std::atomic<bool>& stop);

 private:
  RpcOutcome dispatch(const std::string& method, const nlohmann::json& params);

  SandboxOps& ops_;
  McpOptions options_;
  unsigned documents_ = 0;  // names of documents saved to out_dir
};

// The tools/list answer: names, descriptions and input JSON Schemas.
nlohmann::json tool_definitions(const McpOptions& options);
// tools/call: unknown tools and bad arguments are -32602; failures of the tool itself are a
// result with isError: true. `documents` numbers the files saved to options.out_dir.
RpcOutcome call_tool(SandboxOps& ops, const McpOptions& options, const nlohmann::json& params,
                     unsigned& documents);

}  // namespace carapace::mcp
