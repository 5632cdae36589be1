// A virtio-blk device as plain data (`--drive`, the daemon, snapshot restore); block_factory.h
// builds the device from it.
#pragma once

#include <string>

#include "common/base/token_bucket.h"

namespace carapace {

struct BlockDeviceConfig {
  std::string path;          // raw image
  bool read_only = false;    // VIRTIO_BLK_F_RO; the image is opened O_RDONLY
  std::string overlay_path;  // copy-on-write: writes go here, `path` is only read
  std::string serial;        // GET_ID answer (at most 20 bytes); default derived from the path
  RateLimiter::Config limit;
};

}  // namespace carapace
