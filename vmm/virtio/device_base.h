// DeviceBase: what every virtio device of this monitor (block, net, rng, vsock, fs) shares under
// the VirtioDevice interface. Its type, queue sizes and feature bits are fixed when it is made; no
// field of its configuration space is writable; its state lives under one lock with the
// activation context; and unless it says otherwise its saved state is its queues alone.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>

#include "vmm/virtio/virtio_device.h"

namespace carapace::virtio {

// What a device is, constant for its lifetime.
struct DeviceShape {
  DeviceType type;
  const char* name;  // "virtio-net": names the device in snapshot errors
  std::span<const uint16_t> queue_max_sizes;
  uint64_t features;
  uint32_t state_version;  // the format version of its part of a snapshot
};

class DeviceBase : public VirtioDevice {
 public:
  uint32_t device_type() const final { return uint32_t(shape_.type); }
  std::span<const uint16_t> queue_max_sizes() const final { return shape_.queue_max_sizes; }
  uint64_t device_features() const final { return shape_.features; }
  // Our devices offer no writable field (block: no CONFIG_WCE; net: the MAC would need the
  // control queue, virtio 1.2 §5.1.4.2; vsock: guest_cid is read-only, §5.10.4; rng has no
  // configuration space, §5.4.4): writes are ignored.
  void write_config(uint64_t, std::span<const uint8_t>) override {}

  // Snapshot of a device whose whole state is in its queues: the device part is the version
  // alone. save() takes the lock, so nothing popped may be left unfinished under it; restore()
  // refuses any other part and, with the driver running, resume()s.
  Result<DeviceSnapshot> save() override;
  Status restore(std::span<const uint8_t> device, std::optional<ActivationContext> ctx) override;

 protected:
  explicit DeviceBase(const DeviceShape& shape) : shape_(shape) {}
  const DeviceShape& shape() const { return shape_; }
  // The driver had set DRIVER_OK before the snapshot: serve as after activate() (the default).
  virtual Status resume(ActivationContext ctx) { return activate(std::move(ctx)); }

  // Guards the device's state; see the threading contract in virtio_device.h.
  mutable std::mutex mu_;
  std::optional<ActivationContext> ctx_;  // set while active

 private:
  const DeviceShape shape_;
};

}  // namespace carapace::virtio
