// VirtioBlock snapshots: finishing in-flight requests before a save, and checking on restore that
// the drive the new VM was given is the drive the guest knew.
#include <chrono>

#include "vmm/devices/block/virtio_block.h"
#include "vmm/virtio/state_codec.h"

namespace carapace {

Result<virtio::DeviceSnapshot> VirtioBlock::save() {
  std::lock_guard<std::mutex> lock(mu_);
  TRY_STATUS(finish_in_flight_locked());
  ByteWriter w;
  w.u32(kStateVersion);
  w.u64(limits_.capacity_sectors);
  w.boolean(limits_.read_only);
  return virtio::DeviceSnapshot{virtio::queue_states(ctx_), w.take()};
}

Status VirtioBlock::finish_in_flight_locked() {
  if (!engine_ || !ctx_) return {};
  // The vCPUs are paused, so the guest adds nothing; what the kernel holds finishes on its own
  // (regular-file I/O cannot be cancelled once started, and need not be: it is the guest's).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (engine_->in_flight() > 0) {
    if (std::chrono::steady_clock::now() > deadline)
      return make_error("virtio-blk: " + std::to_string(engine_->in_flight()) +
                        " requests still in flight after 5 s; snapshot refused");
    // A completion may resubmit the rest of a short transfer.
    TRY_STATUS(engine_->submit());
    (void)engine_->wait(100);
    engine_->reap([this](uint64_t tag, int32_t res) { on_completion_locked(tag, res); });
  }
  if (free_slots_.size() != slots_.size())
    return make_error("virtio-blk: a request slot is still in use; snapshot refused");
  virtio::Queue& q = ctx_->queues[0];
  if (q.needs_notification()) ctx_->signals->signal_used(0);
  return {};
}

Status VirtioBlock::restore(std::span<const uint8_t> device,
                            std::optional<virtio::ActivationContext> ctx) {
  ByteReader r(device);
  TRY_STATUS(virtio::expect_version(r, kStateVersion, "virtio-blk"));
  const uint64_t capacity = TRY(r.u64("capacity"));
  const bool read_only = TRY(r.boolean("read-only"));
  TRY_STATUS(r.expect_end("virtio-blk state"));
  if (capacity != limits_.capacity_sectors)
    return as_invalid_input(make_error(
        "virtio-blk: the snapshot's drive has " + std::to_string(capacity) + " sectors, " +
        image_->describe() + " has " + std::to_string(limits_.capacity_sectors)));
  if (read_only != limits_.read_only)
    return as_invalid_input(make_error(std::string("virtio-blk: the snapshot's drive was ") +
                                       (read_only ? "read-only" : "writable") + ", " +
                                       image_->describe() + " is not"));
  if (ctx) return activate(std::move(*ctx));
  return {};
}

}  // namespace carapace
