// A virtio-fs share as plain data: the host folder, the tag the guest mounts it by, the mode the
// host enforces and the bounds of the file server's tables (README.md in this folder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace carapace {

// What the guest may do to the share; enforced by the file server on the host, whatever the
// guest's mount options say.
enum class FsMode {
  kReadOnly,   // every write-class request fails with EROFS
  kReadWrite,  // everything the file server implements
  kNoDelete,   // create and write, never remove or destroy existing data (README.md)
};

struct FsDeviceConfig {
  std::string tag;         // virtio 1.2 §5.11.4: at most 36 bytes, not NUL-terminated when 36
  std::string shared_dir;  // the host folder; the guest never sees above it
  FsMode mode = FsMode::kReadOnly;
  size_t max_inodes = 4096;       // inodes the guest may hold looked up at once (ENFILE past it)
  size_t max_handles = 1024;      // open files and directories at once (EMFILE past it)
  uint32_t max_write = 1u << 20;  // FUSE_INIT max_write and the largest READ served
  uint32_t attr_timeout_s = 1;    // entry and attribute cache time given to the guest
};

}  // namespace carapace
