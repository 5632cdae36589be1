// The microvm back end's snapshot folders on the host: the agent token kept beside a template's
// snapshot, and taking a snapshot a VMM wrote in its own folder into the template's folder.
#pragma once

#include <string>

#include "common/base/result.h"

namespace carapace::service {

// The snapshot's agent token, kept beside the snapshot so that a daemon restarted on the same
// folder can reuse it (post_restore needs it). It tells nothing new to whoever can read the
// folder: the memory file next to it holds the same token. Written last, after the snapshot is
// complete, so its presence marks a finished build. Mode 0600, root's: jailed VMMs cannot read it.
inline constexpr char kAgentTokenFile[] = "agent-token";
Status write_agent_token(const std::string& snapshot_dir, const std::string& token);
Result<std::string> read_agent_token(const std::string& snapshot_dir);

// Checks a snapshot folder a VMM wrote (regular files only: a link or anything else there is an
// error) and makes it the daemon's: with `for_jails`, owned by root, the folder 0755 and the
// files 0644 but the token (0600), so that each jailed VMM restoring it (its own uid, the folder
// bound read-only) can read it and none can change it. Every file is checked and changed through
// a descriptor opened with O_NOFOLLOW, so nothing swapped in meanwhile is followed.
Status seal_snapshot_dir(const std::string& dir, bool for_jails);
// Moves the snapshot folder `from` (inside a VM's folder) to `to` (which must not exist) and
// seals it; on failure `to` is removed.
Status adopt_snapshot_dir(const std::string& from, const std::string& to, bool for_jails);

}  // namespace carapace::service
