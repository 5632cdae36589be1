#include "vmm/virtio/device_base.h"

#include "vmm/virtio/state_codec.h"

namespace carapace::virtio {

Result<DeviceSnapshot> DeviceBase::save() {
  std::lock_guard<std::mutex> lock(mu_);
  return DeviceSnapshot{queue_states(ctx_), version_only_part(shape_.state_version)};
}

Status DeviceBase::restore(std::span<const uint8_t> device, std::optional<ActivationContext> ctx) {
  TRY_STATUS(expect_version_only(device, shape_.state_version, shape_.name));
  if (!ctx) return {};
  return resume(std::move(*ctx));
}

}  // namespace carapace::virtio
