// File-system helpers for building and removing a jail. Removal walks with directory fds and
// never follows a symlink or crosses into another mount, so whatever the jailed process left in
// its writable directories cannot point the supervisor (root) at a host file.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/base/result.h"

namespace carapace {

// Removes everything inside the directory `dirfd` (not the directory itself).
Status remove_dir_contents(int dirfd, const std::string& what);
// Removes `path` and, for a directory, everything below it (links are removed, not followed;
// other mounts are not entered); a missing path is not an error.
Status remove_tree(const std::string& path);
// mkdir -p for `path` (absolute), each new directory with `mode`.
Status make_dirs(const std::string& path, mode_t mode);
// Creates an empty file or directory at `path` (parents included) to bind-mount `like` onto.
Status make_mount_point(const std::string& path, bool directory);

}  // namespace carapace
