// `carapace jail attach`: puts a host folder into a running jail's mount namespace, for a
// workspace share given to a VM that was jailed before anyone knew the folder (a pooled VM at
// hand-out). Run by root as its own short-lived, single-threaded process (setns into a mount
// namespace refuses a multi-threaded caller).
//
// The folder arrives as an inherited descriptor the caller validated, never as a path looked up
// here; it is cloned into a detached mount (open_tree), given its attributes there -- nosuid,
// nodev, read-only when asked, and an id mapping that shows the folder owner's files as owned by
// the jail's uid -- and only then moved into the jail onto a directory reached without following
// symlinks. Nothing of the host's mount table changes.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

// Host ids as the folder's files have them (`from`) and as the jailed process sees them (`to`).
struct AttachIdMap {
  uid_t from_uid = 0;
  gid_t from_gid = 0;
  uid_t to_uid = 0;
  gid_t to_gid = 0;
};

struct AttachConfig {
  pid_t pid = 0;       // a process inside the jail (its mount namespace is the target's)
  int source_fd = -1;  // the folder, inherited (O_PATH is enough)
  std::string target;  // an existing directory, as the jail sees it
  bool read_only = false;
  std::optional<AttachIdMap> idmap;
  bool help = false;
};

Result<AttachConfig> parse_attach_args(const std::vector<std::string>& args);
// Does the attach; errors name the step that failed.
Status run_attach(const AttachConfig& cfg);
int cmd_jail_attach(const std::vector<std::string>& args);

extern const char kJailAttachUsage[];

}  // namespace carapace
