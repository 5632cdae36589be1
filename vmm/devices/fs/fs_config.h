// A virtio-fs share as plain data: the host folder, the tag the guest mounts it by, the mode the
// host enforces and the bounds of the file server's tables (README.md in this folder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace carapace {

// What the guest may do to the share; enforced by the file server on the host, whatever the
// guest's mount options say.
enum class FsMode {
  kReadOnly,   // every write-class request fails with EROFS
  kReadWrite,  // everything the file server implements
  kNoDelete,   // create and write, never remove or destroy existing data (README.md)
};

// The names the CLI (`--fs mode=`) and the control API (`PUT /fs/{tag}`) use.
inline const char* fs_mode_name(FsMode mode) {
  switch (mode) {
    case FsMode::kReadOnly:
      return "ro";
    case FsMode::kReadWrite:
      return "rw";
    case FsMode::kNoDelete:
      return "rw-nodelete";
  }
  return "?";
}
inline std::optional<FsMode> parse_fs_mode(std::string_view name) {
  for (FsMode m : {FsMode::kReadOnly, FsMode::kReadWrite, FsMode::kNoDelete})
    if (name == fs_mode_name(m)) return m;
  return std::nullopt;
}

struct FsDeviceConfig {
  std::string tag;  // virtio 1.2 §5.11.4: at most 36 bytes, not NUL-terminated when 36
  // The host folder; the guest never sees above it. Empty: the device is unbound (every request
  // is refused until the control API binds a folder, VirtioFs::bind).
  std::string shared_dir;
  FsMode mode = FsMode::kReadOnly;
  // Inodes the guest may hold looked up at once (ENFILE past it). Each is an O_PATH fd of the
  // VMM's, so its RLIMIT_NOFILE must allow as many (vmm/cli/process_limits.h; the daemon's jails
  // give VMMs kVmOpenFiles); the guest's kernel keeps what it created or looked up until its
  // inode cache shrinks, so a checkout of tens of thousands of files needs them all.
  size_t max_inodes = 65536;
  size_t max_handles = 1024;      // open files and directories at once (EMFILE past it)
  uint32_t max_write = 1u << 20;  // FUSE_INIT max_write and the largest READ served
  uint32_t attr_timeout_s = 1;    // entry and attribute cache time given to the guest
};

}  // namespace carapace
