// Builds a virtio-vsock device from its configuration (the machine's only entry into this folder).
#pragma once

#include <memory>

#include "common/base/result.h"
#include "vmm/devices/vsock/vsock_config.h"
#include "vmm/event/event_loop.h"
#include "vmm/virtio/virtio_device.h"

namespace carapace {

// Binds the host-side Unix socket (`uds`); a path in use or unbindable is an error of kind
// kInvalidInput.
Result<std::shared_ptr<virtio::VirtioDevice>> make_vsock_device(const VsockDeviceConfig& config,
                                                                EventLoop& loop);

}  // namespace carapace
