// What the agent is told at start: its command-line flags, and for the guest's PID 1 the kernel
// command line. Pure parsing (no I/O), unit tested in tests/agent/options_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent/wire.h"
#include "common/base/result.h"

namespace carapace::agent {

struct AgentOptions {
  enum class Listen { kVsock, kUnix, kFd };
  Listen listen = Listen::kVsock;
  uint32_t vsock_port = kAgentVsockPort;
  std::string unix_path;
  // --listen fd:N: an inherited socket, already bound and listening (the process isolation back
  // end binds it where the sandbox cannot replace it).
  int listen_fd = -1;
  std::string token;  // empty: none given
  // --token-fd: the token is read from this inherited descriptor (a pipe) at start, which is then
  // closed; a sandboxed process can read neither it nor a command line. -1: none.
  int token_fd = -1;
  // The sandbox root: file operations and exec working directories are confined to it.
  std::string root = "/work";
  // --mount-point PATH (repeatable): folders mounted inside the root before the agent started
  // (the process back end's workspace mounts), which file requests may enter (sandbox_root.h).
  std::vector<std::string> mount_points;
  uint64_t max_file_bytes = kDefaultMaxFileBytes;
  int max_connections = kDefaultMaxConnections;
  bool help = false;
};

// --listen vsock[:PORT] | unix:PATH | fd:N, --token HEX, --token-fd N, --root DIR,
// --mount-point PATH, --max-file-bytes N, --max-connections N, --help.
Result<AgentOptions> parse_agent_args(const std::vector<std::string>& args);

// carapace.token=HEX and carapace.selftest=NAME from /proc/cmdline. A malformed value is left
// out and described in `problems` (PID 1 prints them; it must not stop over them).
struct KernelCmdline {
  std::string token;
  std::string selftest;
  std::vector<std::string> problems;
};
KernelCmdline parse_kernel_cmdline(std::string_view cmdline);

// 1..kMaxTokenChars hex digits.
bool valid_token(std::string_view token);
// A file name under /usr/lib/carapace/selftest: [A-Za-z0-9._-], not starting with '.'.
bool valid_selftest_name(std::string_view name);

extern const char kAgentUsage[];

}  // namespace carapace::agent
