#include "vmm/devices/vsock/vsock_factory.h"

#include "vmm/devices/vsock/vsock_device.h"

namespace carapace {

Result<std::shared_ptr<virtio::VirtioDevice>> make_vsock_device(const VsockDeviceConfig& config,
                                                                EventLoop& loop) {
  return std::shared_ptr<virtio::VirtioDevice>(
      TRY(VirtioVsock::create(config.guest_cid, config.uds_path, loop)));
}

}  // namespace carapace
