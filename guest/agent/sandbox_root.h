// SandboxRoot: the directory file operations and exec working directories are confined to
// (/work in the guest, --root for host tests). docs/security.md #28: every request path is
// resolved by the kernel beneath the root's descriptor with
//   openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV),
// so "..", symlinks (anywhere in the path), /proc magic links and mount crossings are refused at
// the moment of the open - a path swapped after any earlier look cannot lead outside. Callers
// then work on the returned descriptor only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace::agent {

// openat2(dirfd, path, flags, mode) with the confining RESOLVE_* flags above.
Result<UniqueFd> open_beneath(int dirfd, const std::string& path, uint64_t flags, mode_t mode = 0);

class SandboxRoot {
 public:
  // Opens `path` (made canonical with realpath) as the root.
  static Result<SandboxRoot> open(const std::string& path);

  // A workspace mount (op "mount") at `path` inside the root: RESOLVE_NO_XDEV stops every
  // request path at the mount point, so request paths beneath it are resolved beneath the
  // mount's own descriptor instead, under the same RESOLVE_* flags (nothing else crosses a
  // mount). `path` must already be a directory mounted there. The longest registered prefix wins.
  Status add_mount(std::string_view path);
  // Forgets the mount at `path` (after op "umount"); false if none was registered there.
  bool remove_mount(std::string_view path);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

  // A request path made relative to the root: a relative path, or an absolute one inside the
  // root's path. Empty, "." and the root itself give ".". NUL bytes, ".." components and
  // absolute paths elsewhere are refused (path_refused) before the kernel sees them.
  Result<std::string> relative(std::string_view path) const;

  // Opens a request path beneath the root.
  Result<UniqueFd> open(std::string_view path, uint64_t flags, mode_t mode = 0) const;

  // Opens (O_PATH) the directory that holds the path's last component and stores that
  // component in *leaf. With `parents`, missing directories are created (0755) one confined
  // step at a time.
  Result<UniqueFd> open_parent(std::string_view path, bool parents, std::string* leaf) const;

 private:
  struct SubRoot {
    std::string rel;  // relative to the root, no "." or ".."
    UniqueFd fd;
  };
  struct SubRoots {
    std::mutex mu;
    std::vector<std::shared_ptr<SubRoot>> list;
  };

  SandboxRoot(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  // The directory fd `rel` is to be resolved beneath and the rest of `rel` relative to it: the
  // root, or the deepest sub-root `rel` is in. `keep` holds that sub-root's fd alive.
  int base_for(std::string& rel, std::shared_ptr<SubRoot>& keep) const;

  std::string path_;
  UniqueFd fd_;
  std::shared_ptr<SubRoots> subs_ = std::make_shared<SubRoots>();
};

}  // namespace carapace::agent
