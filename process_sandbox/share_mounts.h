// The process sandbox's workspace mounts (share_spec.h; docs/security.md #65), in two halves:
//
//   supervisor, host mount namespace            child (PID 1), its own mount namespace, real root
//   ─ opens each host folder (O_PATH)           ─ makes the mount point beneath the new root,
//   ─ open_tree(OPEN_TREE_CLONE): a detached      one component at a time, never through a link
//     copy of that folder's mount, alone        ─ move_mount()s the prepared tree onto it
//     (not its submounts)
//   ─ mount_setattr: MOUNT_ATTR_IDMAP, NOSUID,
//     NODEV, private, and RDONLY for `ro`
//
// The idmap is a user namespace that maps the share root's owner (uid and gid) to the sandbox's
// host uid and gid: the sandbox, uid 1000 inside, is that owner inside the share, and what it
// creates is owned on the host by the owner, never by the sandbox's uid. Files of other owners
// show as the overflow id (nobody) and are only what their "other" bits allow. The kernel does
// all of it: a `ro` share is a read-only mount the sandbox (no capability over the mount
// namespace, mount calls denied by the workload filter) can never remount.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "process_sandbox/share_spec.h"

namespace carapace {

// A share's host folder: O_PATH | O_DIRECTORY of `spec.host` as given (the operator's path; the
// daemon names a folder it checked and holds as /proc/self/fd/N). Invalid input when it is not a
// directory.
Result<UniqueFd> open_share_dir(const ShareSpec& spec);

struct PreparedShare {
  ShareSpec spec;
  UniqueFd tree;  // the detached, idmapped mount
  uid_t owner_uid = 0;
  gid_t owner_gid = 0;
};

// In the supervisor, before the sandbox exists. `dirs[i]` is shares[i]'s folder (open_share_dir).
// A kernel or file system that refuses an idmapped mount is invalid input naming the share: the
// create fails rather than mounting something weaker.
Result<std::vector<PreparedShare>> prepare_shares(const std::vector<ShareSpec>& shares,
                                                  std::vector<UniqueFd> dirs, uid_t sandbox_uid,
                                                  gid_t sandbox_gid);

// In the child, as real root, once the root at `root` is built and before pivot_root: each tree
// moved onto `root` + its guest path (mount points made 0755, root's, where missing). A symlink
// on the way (the image's) is refused, so a share can never land outside its guest path. The
// trees are closed after.
Status attach_shares(const std::string& root, std::vector<PreparedShare>& shares);

}  // namespace carapace
