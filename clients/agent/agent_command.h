// `carapace agent`: one request to a sandbox's guest agent from the command line (see
// kAgentCommandUsage). Parsing is pure and unit tested; cmd_agent() does the I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

struct AgentCommandArgs {
  bool vsock = true;  // false: a Unix socket the agent listens on itself
  std::string socket_path;
  uint32_t vsock_port = 52;
  std::string token;  // --token, else $CARAPACE_AGENT_TOKEN
  int io_timeout_ms = -1;
  std::string op;
  std::vector<std::string> op_args;
  bool help = false;
};

// The flags before the op; `env_token` stands for $CARAPACE_AGENT_TOKEN.
Result<AgentCommandArgs> parse_agent_command_args(const std::vector<std::string>& args,
                                                  const std::string& env_token);

int cmd_agent(const std::vector<std::string>& args);

extern const char kAgentCommandUsage[];

}  // namespace carapace
