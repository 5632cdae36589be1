// VirtioDevice: what a virtio device (block, net, vsock, rng, fs, ...) implements. The transport
// (MmioTransport) owns the register file, feature negotiation and the status state machine; the
// device only sees validated Queues, guest memory, and a DeviceSignals to raise interrupts.
//
// Threading contract:
//   - device_type/queue_max_sizes/device_features are constant for the device's lifetime.
//   - read_config/write_config/activate/reset are called from vCPU threads, one at a time
//     (under the transport lock).
//   - queue_notify runs on the event loop thread (or, with no loop, on the vCPU thread that wrote
//     QueueNotify). The device guards its queues with its own mutex: reset() must wait for a
//     running queue_notify, and a queue_notify that arrives after reset() must do nothing.
//   - DeviceSignals methods are lock-free and may be called from any thread, including while the
//     device holds its own lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "common/base/result.h"
#include "vmm/event/event_loop.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/virtio/queue.h"

namespace carapace::virtio {

// Device type ids (virtio 1.2 §5).
enum class DeviceType : uint32_t { kNet = 1, kBlock = 2, kRng = 4, kVsock = 19, kFs = 26 };
const char* device_type_name(uint32_t type);

// How a device talks back to its transport (implemented by MmioTransport).
class DeviceSignals {
 public:
  virtual ~DeviceSignals() = default;
  // Used-buffer notification for `queue` (virtio 1.2 §2.3.2). Call when
  // Queue::needs_notification() says so.
  virtual void signal_used(uint16_t queue) = 0;
  // The device changed its configuration space (virtio 1.2 §2.5.1): bumps ConfigGeneration and
  // sends a configuration-change notification.
  virtual void signal_config_change() = 0;
  // The guest broke the device (a corrupt ring, Queue::pop() failed): sets DEVICE_NEEDS_RESET
  // and notifies the driver (virtio 1.2 §2.1.2). The device should stop processing until reset.
  // `why` is logged once.
  virtual void report_needs_reset(const Error& why) = 0;
};

// Guest mistakes counted per device; readable from any thread. Host failures are not counted
// here: they are propagated or logged.
struct GuestErrorCounters {
  std::atomic<uint64_t> bad_register_access{0};  // wrong width, misaligned, read-only register
  std::atomic<uint64_t> bad_status_write{0};     // status transitions the state machine refuses
  std::atomic<uint64_t> refused_features{0};     // FEATURES_OK refused
  std::atomic<uint64_t> refused_queue{0};        // QueueReady / activation refused a ring
  std::atomic<uint64_t> needs_reset{0};          // DEVICE_NEEDS_RESET raised
  std::atomic<uint64_t> bad_request{0};          // requests answered with an error by the device
};

// What a device gets on DRIVER_OK.
struct ActivationContext {
  const GuestMemory* memory = nullptr;
  // One per queue_max_sizes() entry, in order; a queue the driver did not make ready has
  // ready() == false (pop() finds nothing).
  std::vector<Queue> queues;
  // Features the driver accepted (a subset of device_features(), VIRTIO_F_VERSION_1 included).
  uint64_t acked_features = 0;
  DeviceSignals* signals = nullptr;
  // For the device's own backend fds (tap, io_uring completions, sockets, timers). The transport
  // registers the queue notification eventfds itself and calls queue_notify(). May be null in
  // unit tests.
  EventLoop* loop = nullptr;
  GuestErrorCounters* errors = nullptr;
};

// What a device gives a snapshot (see VirtioDevice::save): its queues' plain state while it is
// active (empty otherwise), and its own part, bytes the device encodes with a version of its own.
// The transport stores the queues' cursors next to its registers; on restore every queue is
// rebuilt through Queue::activate, validated exactly as on activation (docs/security.md #22).
struct DeviceSnapshot {
  std::vector<QueueState> queues;
  std::vector<uint8_t> device;
};

// The queues of an activation context as plain data; empty when `ctx` is not set.
std::vector<QueueState> queue_states(const std::optional<ActivationContext>& ctx);

class VirtioDevice {
 public:
  virtual ~VirtioDevice() = default;

  virtual uint32_t device_type() const = 0;
  // One entry per queue: its maximum size (QueueNumMax), a power of two <= 32768.
  virtual std::span<const uint16_t> queue_max_sizes() const = 0;
  // Device-specific feature bits. The transport adds VIRTIO_F_VERSION_1,
  // VIRTIO_RING_F_INDIRECT_DESC and VIRTIO_RING_F_EVENT_IDX, which the core implements.
  virtual uint64_t device_features() const = 0;

  // Configuration space (virtio 1.2 §2.5) at `offset`, any width; `data` arrives zeroed and
  // bytes past the device's config stay zero. See read_config_bytes() / write_config_bytes().
  virtual void read_config(uint64_t offset, std::span<uint8_t> data) const = 0;
  virtual void write_config(uint64_t offset, std::span<const uint8_t> data) = 0;

  // DRIVER_OK: start serving. An error refuses activation (the transport sets NEEDS_RESET); a
  // device whose essential queue is not ready may refuse or simply wait for a reset.
  virtual Status activate(ActivationContext ctx) = 0;
  // Status 0 written: stop, drop the queues, forget negotiated state (virtio 1.2 §2.4).
  virtual void reset() = 0;
  // The driver notified queue `index` (virtio 1.2 §2.9): pop and serve it.
  virtual void queue_notify(uint16_t index) = 0;

  // Snapshot: called with the vCPUs paused. Requests the device has popped must be finished
  // first (completed into the used ring) or the save refused: a restored queue starts with
  // nothing in flight. Host-side state that cannot travel (sockets, a frame held for the guest)
  // is left out; the device recreates it from its own configuration on restore.
  virtual Result<DeviceSnapshot> save() { return make_error("snapshot not supported"); }
  // Restore, on a device that has not been activated, before any vCPU runs. `device` is what
  // save() put in DeviceSnapshot::device; the device checks it against its own configuration
  // (block: the same capacity) and refuses what does not fit. With `ctx` set (the driver had set
  // DRIVER_OK) the device then serves as after activate(), with the queues the transport rebuilt
  // and validated. On error the device is left inactive (the transport resets it).
  virtual Status restore(std::span<const uint8_t> device, std::optional<ActivationContext> ctx) {
    (void)device;
    (void)ctx;
    return make_error("snapshot not supported");
  }
};

// Helpers for config space: copy the bytes of `config` that overlap [offset, offset + len).
// Out-of-range parts are left as they are (zero for reads), never an error (docs/security.md #9).
void read_config_bytes(std::span<const uint8_t> config, uint64_t offset, std::span<uint8_t> data);
void write_config_bytes(std::span<uint8_t> config, uint64_t offset, std::span<const uint8_t> data);
// The same over a plain configuration struct laid out as the spec gives it (virtio_blk_config,
// virtio_net_config, le64 guest_cid, ...).
template <typename Config>
void read_config_struct(const Config& config, uint64_t offset, std::span<uint8_t> data) {
  static_assert(std::is_trivially_copyable_v<Config>);
  read_config_bytes({reinterpret_cast<const uint8_t*>(&config), sizeof config}, offset, data);
}

}  // namespace carapace::virtio
