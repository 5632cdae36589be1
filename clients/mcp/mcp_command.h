// `carapace mcp`: a Model Context Protocol server on stdio for one sandbox (clients/mcp).
#pragma once

#include <string>
#include <vector>

#include "clients/cpp/daemon_client.h"
#include "common/base/result.h"

namespace carapace {

extern const char kMcpUsage[];

struct McpArgs {
  std::string socket;       // "" = $CARAPACE_SOCKET or the default
  std::string template_id;  // create a sandbox from it on the first tool call
  std::string sandbox_id;   // or use this one (never destroyed by us)
  std::string out_dir;      // generate_document saves documents here
  uint64_t timeout_s = 0;   // TTL of the sandbox we create (0: the daemon's default)
  // Its egress policy (empty: the template's), with the operator's credentials and upstreams,
  // which set_sandbox_network keeps.
  sandbox::NetworkRequest network;
  bool network_tool = false;  // offer set_sandbox_network to the model
  bool help = false;
};

Result<McpArgs> parse_mcp_args(const std::vector<std::string>& args);

int cmd_mcp(const std::vector<std::string>& args);

}  // namespace carapace
