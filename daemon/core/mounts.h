// Workspace mounts in the daemon (docs/api.md, Mounts; docs/security.md #64, #67): a request's
// list checked, then each host
// folder opened beneath the daemon's `mount_roots`, so a back end is only ever given a folder
// that was checked, as an open descriptor.
//
// In order, and each failure a one-line 400 that changes nothing:
//   1. the list: at most 8, host_path absolute with no empty, `.` or `..` component, guest_path
//      by the rules of process_sandbox/share_spec.h, no two guest paths the same or nested;
//   2. mounts enabled at all (a config without mount_roots refuses every mount);
//   3. host_path lexically at or beneath one mount root (the longest that matches);
//   4. from that root's descriptor, one component at a time, openat2 O_PATH | O_DIRECTORY with
//      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV: a symlink
//      anywhere on the way, a file, a missing folder or a mount point is refused, naming it.
// The last descriptor is the share: swapping a component for a symlink afterwards changes
// nothing, since the back end mounts that descriptor, never the path.
#pragma once

#include <string>
#include <vector>

#include "daemon/core/api_result.h"
#include "daemon/core/service_requests.h"

namespace carapace::service {

// Step 1 (pure): `field` names the list in messages, e.g. "mounts" → "mounts[2].host_path: ...".
ApiStatus check_mount_requests(const std::vector<MountRequest>& mounts, const std::string& field);

// Steps 1 to 4. An empty list is no mounts whatever the config.
ApiResult<std::vector<SandboxMount>> resolve_mounts(const std::vector<MountRequest>& mounts,
                                                    const std::vector<std::string>& mount_roots,
                                                    const std::string& field);

// What the views show of a sandbox's mounts (no descriptor).
std::vector<MountRequest> mount_views(const std::vector<SandboxMount>& mounts);

// A fork child's mounts from its parent's: the same folders (the parent's descriptors), `rw` and
// `rw-nodelete` made `ro` unless `keep_modes`.
std::vector<SandboxMount> inherited_mounts(const std::vector<SandboxMount>& parent,
                                           bool keep_modes);

}  // namespace carapace::service
