// Builds a virtio-net device from its configuration (the machine's only entry into this folder).
#pragma once

#include <memory>

#include "common/base/result.h"
#include "vmm/devices/net/net_config.h"
#include "vmm/event/event_loop.h"
#include "vmm/virtio/virtio_device.h"

namespace carapace {

// Opens the backend (a TAP device or a Unix datagram socket). Bad names, paths or MACs are
// errors of kind kInvalidInput.
Result<std::shared_ptr<virtio::VirtioDevice>> make_net_device(const NetDeviceConfig& config,
                                                              EventLoop& loop);

}  // namespace carapace
