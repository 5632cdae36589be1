// NetDevice snapshots: the queues only (see net_device.h).
#include "vmm/devices/net/net_device.h"
#include "vmm/virtio/state_codec.h"

namespace carapace::net {

Result<virtio::DeviceSnapshot> NetDevice::save() {
  std::lock_guard<std::mutex> lock(mu_);
  ByteWriter w;
  w.u32(kStateVersion);
  // RX gives an empty ring back (undo_pop) and TX completes each chain as it goes: nothing is
  // in flight here; the transport checks it.
  return virtio::DeviceSnapshot{virtio::queue_states(ctx_), w.take()};
}

Status NetDevice::restore(std::span<const uint8_t> device,
                          std::optional<virtio::ActivationContext> ctx) {
  ByteReader r(device);
  TRY_STATUS(virtio::expect_version(r, kStateVersion, "virtio-net"));
  TRY_STATUS(r.expect_end("virtio-net state"));
  if (ctx) return activate(std::move(*ctx));
  return {};
}

}  // namespace carapace::net
