// The listening socket and the accept loop: one thread per connection, at most
// options.max_connections at once (one more is told `busy` and closed).
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "guest/agent/agent_context.h"

namespace carapace::agent {

// AF_VSOCK on `port`, any CID.
Result<UniqueFd> listen_vsock(uint32_t port);
// A Unix stream socket at `path` (a stale socket there is replaced), mode 0600.
Result<UniqueFd> listen_unix(const std::string& path);

// Accepts until accept fails for good; returns that error.
Status serve_forever(AgentContext& ctx, int listen_fd);

}  // namespace carapace::agent
