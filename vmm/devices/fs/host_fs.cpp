// Host file system access beneath a directory fd (host_fs.h).
#include "vmm/devices/fs/host_fs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace carapace::fs {

FsResult<UniqueFd> open_beneath(int dirfd, const std::string& name, int flags, mode_t mode) {
  TRY_STATUS(check_name(name));
  open_how how{};
  // openat2 refuses flags that mean nothing with O_PATH (O_NOCTTY among them).
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC | ((flags & O_PATH) != 0 ? 0 : O_NOCTTY);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS;
  const long fd = ::syscall(SYS_openat2, dirfd, name.c_str(), &how, sizeof how);
  if (fd < 0) {
    // A mount point inside the share (docs/security.md #56): refused, not a crossing.
    if (errno == EXDEV) return fs_error(EACCES);
    return last_errno();
  }
  return UniqueFd(static_cast<int>(fd));
}

FsResult<UniqueFd> lookup_beneath(int dirfd, const std::string& name, struct stat& st) {
  UniqueFd fd = TRY(open_beneath(dirfd, name, O_PATH | O_NOFOLLOW));
  st = TRY(stat_fd(fd.get()));
  if (!allowed_type(st.st_mode)) return fs_error(EACCES);
  return fd;
}

FsResult<UniqueFd> reopen(int proc_fd, int fd, int flags) {
  const std::string n = std::to_string(fd);
  const int r = ::openat(proc_fd, n.c_str(),
                         (flags & ~(O_CREAT | O_EXCL | O_TMPFILE)) | O_CLOEXEC | O_NOCTTY);
  if (r < 0) return last_errno();
  return UniqueFd(r);
}

FsResult<struct stat> stat_fd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) < 0) return last_errno();
  return st;
}

}  // namespace carapace::fs
