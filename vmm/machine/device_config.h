// The virtio devices of a VM, as plain data: filled by the CLI (`--drive`, `--net`, `--vsock`,
// `--rng`, `--fs`), later by the API, the pool and snapshot restore. Each device folder declares
// its struct (vmm/devices/<name>/<name>_config.h) and builds its device from it (*_factory.h).
#pragma once

#include <optional>
#include <vector>

#include "vmm/devices/block/block_config.h"
#include "vmm/devices/fs/fs_config.h"
#include "vmm/devices/net/net_config.h"
#include "vmm/devices/rng/rng_config.h"
#include "vmm/devices/vsock/vsock_config.h"

namespace carapace {

struct DeviceConfigs {
  std::vector<BlockDeviceConfig> drives;
  std::vector<NetDeviceConfig> nets;
  std::optional<VsockDeviceConfig> vsock;
  std::optional<RngDeviceConfig> rng;
  // After every other device: MMIO slots are allocated in this order, and snapshots taken before
  // virtio-fs existed must keep their slots.
  std::vector<FsDeviceConfig> filesystems;
};

}  // namespace carapace
