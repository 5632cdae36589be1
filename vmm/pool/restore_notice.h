// The restore notice: right after a clone of a snapshot starts, the VMM tells the
// guest agent what must not be shared between clones — the wall clock (the snapshot's is stale),
// fresh entropy (every clone would otherwise continue the same RNG state) and a per-clone sandbox
// token — with the agent protocol's `post_restore` request, over the clone's vsock socket.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

struct RestoreNotice {
  std::string token;      // the snapshot's sandbox token (authenticates the request)
  std::string new_token;  // the clone's own token
  std::string hostname;   // optional
};

// 32 random bytes from getrandom, hex: a sandbox token.
Result<std::string> generate_sandbox_token();

// Sends `notice` with the current wall clock and 64 bytes of getrandom entropy to the agent behind
// the hybrid vsock socket `vsock_uds` (CONNECT 52). Retries the connection until `timeout`: the
// guest needs a moment after the restore to take its TRANSPORT_RESET and listen again. Returns
// what the agent applied.
Result<std::vector<std::string>> send_restore_notice(const std::string& vsock_uds,
                                                     const RestoreNotice& notice,
                                                     std::chrono::milliseconds timeout);

}  // namespace carapace
