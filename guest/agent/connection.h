// One client connection: frames in, one request at a time, replies out. Malformed input
// (docs/security.md #33: bad length, bad JSON, not an object, missing or mistyped members, unknown
// op) and a wrong token get an error reply and the connection is closed; the agent and its
// other connections carry on.
#pragma once

#include "common/base/unique_fd.h"
#include "guest/agent/agent_context.h"

namespace carapace::agent {

void serve_connection(AgentContext& ctx, UniqueFd fd);

}  // namespace carapace::agent
