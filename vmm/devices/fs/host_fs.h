// The only ways the file server touches the host file system: relative to a directory fd of
// ours, one component at a time, never following a symlink (docs/security.md #28, #56).
//
//   open_beneath: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV |
//     RESOLVE_NO_SYMLINKS: the name cannot leave the directory, cross a mount or follow a link;
//     with O_PATH | O_NOFOLLOW a symlink itself comes back (to be read, never followed).
//   reopen: an fd of ours opened again with other flags through /proc/self/fd/N. That magic link
//     names the inode the fd already holds (whatever its name became), so a name swapped for a
//     symlink after LOOKUP is never followed; symlink inodes are never reopened.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "common/base/unique_fd.h"
#include "vmm/devices/fs/fuse_wire.h"

namespace carapace::fs {

// What a share may hold: regular files, directories, symlinks. FIFOs, sockets and device nodes
// are refused (a FIFO blocks the device thread, a device node reaches host hardware).
inline bool allowed_type(mode_t mode) {
  return S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode);
}

FsResult<UniqueFd> open_beneath(int dirfd, const std::string& name, int flags, mode_t mode = 0);

// O_PATH handle of `name` in `dirfd` (a symlink itself, not its target) and its stat. Refuses a
// type that allowed_type() rejects (EACCES) and a mount point (EACCES).
FsResult<UniqueFd> lookup_beneath(int dirfd, const std::string& name, struct stat& st);

// `fd` opened again with `flags` (no O_CREAT) through the /proc/self/fd folder `proc_fd`.
FsResult<UniqueFd> reopen(int proc_fd, int fd, int flags);

FsResult<struct stat> stat_fd(int fd);

}  // namespace carapace::fs
