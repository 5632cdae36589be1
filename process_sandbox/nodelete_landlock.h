// `rw-nodelete` on the process back end (docs/security.md #65, #66): a Landlock ruleset (Linux
// 6.2+, ABI 3) applied to the agent, and so to every process of the sandbox, before the agent is
// exec'd.
//
// Landlock only grants, on hierarchies: the ruleset handles REMOVE_FILE, REMOVE_DIR, TRUNCATE and
// REFER (MAKE_* and WRITE_FILE are not handled, so creating and writing stay allowed), grants
// REFER on `/` (cross-folder renames and links would otherwise always be EXDEV), and grants the
// other three on every entry of every folder above a rw-nodelete mount point except the one on the
// way to the share. Beneath the share none of them is granted: unlink, rmdir, truncate (also
// O_TRUNC of an existing file), and any rename of an existing name there (Landlock counts the old
// name as removed) are EACCES. The price, which docs/api.md states: entries directly in those
// folders above the mount point -- and folders made there after the start -- cannot be removed,
// renamed away or truncated either. Outside /work and /tmp those folders are root's and read-only
// to the sandbox anyway.
#pragma once

#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

// The running kernel's Landlock ABI version; 0 when it has none or it is disabled.
int landlock_abi();

// Invalid input unless a kernel with Landlock ABI `abi` can enforce rw-nodelete (ABI 3:
// TRUNCATE); the message says what is missing.
Status nodelete_supported_at(int abi);
// The same for the running kernel.
inline Status check_nodelete_supported() {
  return nodelete_supported_at(landlock_abi());
}

// In the sandbox, as real root after pivot_root (the paths are the sandbox's): the ruleset for the
// rw-nodelete guest paths (not empty).
Result<UniqueFd> nodelete_ruleset(const std::vector<std::string>& guest_paths);

// Restricts the calling thread, and everything it later execs and forks, to `ruleset`. Needs
// no_new_privs (set here).
Status restrict_self_to(int ruleset);

}  // namespace carapace
