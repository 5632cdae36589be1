// VirtioVsock snapshots: the queues only; a restored device resets the guest's transport (see
// vsock_device.h).
#include "vmm/devices/vsock/vsock_device.h"

namespace carapace {

Status VirtioVsock::resume(virtio::ActivationContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.queues.size() != 3) return make_error("virtio-vsock: expects three queues");
  ctx_ = std::move(ctx);
  broken_ = tx_stalled_ = false;
  // This device has no connections of the guest's to close (host sockets stayed with the old
  // VM). The reset is posted now if the driver left a buffer on the event queue, else when it
  // gives one (virtio 1.2 §5.10.6.6). Host CONNECTs that reached the new socket meanwhile are
  // kept: their REQUESTs follow the event.
  event_pending_ = true;
  process_event_locked();
  pump_locked();
  return {};
}

}  // namespace carapace
