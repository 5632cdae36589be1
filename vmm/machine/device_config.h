// The virtio devices of a VM, as plain data: filled by the CLI (`--drive`, `--net`, `--vsock`,
// `--rng`), later by the API, the pool and snapshot restore. Each device folder declares its
// struct (vmm/devices/<name>/<name>_config.h) and builds its device from it (*_factory.h).
#pragma once

#include <optional>
#include <vector>

#include "vmm/devices/block/block_config.h"
#include "vmm/devices/net/net_config.h"
#include "vmm/devices/rng/rng_config.h"
#include "vmm/devices/vsock/vsock_config.h"

namespace carapace {

struct DeviceConfigs {
  std::vector<BlockDeviceConfig> drives;
  std::vector<NetDeviceConfig> nets;
  std::optional<VsockDeviceConfig> vsock;
  std::optional<RngDeviceConfig> rng;
};

}  // namespace carapace
