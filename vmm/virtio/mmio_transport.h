// MmioTransport: one virtio-mmio version 2 device window (virtio 1.2 §4.2) in front of a
// VirtioDevice. It owns the register file, feature negotiation and the status state machine
// (virtio 1.2 §2.1, §3.1.1), captures the driver's queue configuration, validates it at
// QueueReady and again at DRIVER_OK (Queue::activate), and hands the device its context.
//
// Guest misuse never crashes or stalls the VMM: register accesses that are not 4 bytes wide and
// aligned read 0 / are ignored (config space allows any width; docs/security.md #9), queue
// registers are frozen once the queue is ready or after DRIVER_OK (7), a QueueSel past the
// device's queues makes queue registers read 0 and ignore writes (8), misaligned or overlapping
// rings are refused at QueueReady (10), and notifies for missing or not-ready queues are
// ignored (11). Each mistake is counted in errors().
//
// Notifications: each queue has an EventFd. The VMM registers it as an ioeventfd on QueueNotify
// with datamatch = queue index (register_ioevents), so notifies never exit to user space; a
// QueueNotify write that does reach us signals the same EventFd. On DRIVER_OK the transport adds
// each ready queue's EventFd to the event loop; its handler drains it and calls
// device.queue_notify(index). Without an event loop (unit tests, fuzzing) QueueNotify calls
// queue_notify directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/base/event_fd.h"
#include "common/base/result.h"
#include "vmm/bus/bus.h"
#include "vmm/event/event_loop.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/virtio/interrupt.h"
#include "vmm/virtio/mmio_registers.h"
#include "vmm/virtio/virtio_device.h"

namespace carapace::virtio {

// How the VMM routes guest writes at an MMIO address straight to an EventFd (KVM_IOEVENTFD with
// KVM_IOEVENTFD_FLAG_DATAMATCH). Implemented by the machine; faked in tests.
class IoEventRegistrar {
 public:
  virtual ~IoEventRegistrar() = default;
  // A `len`-byte write of `datamatch` at guest-physical `addr` signals `fd`.
  virtual Status register_ioevent(uint64_t addr, uint32_t len, uint64_t datamatch,
                                  const EventFd& fd) = 0;
};

class MmioTransport : public BusDevice, private DeviceSignals {
 public:
  // `mem`, `irq` and `loop` must outlive the transport; `irq` and `loop` may be null (tests).
  // `mmio_base` is the window's guest-physical address (for ioeventfds and log lines).
  static Result<std::shared_ptr<MmioTransport>> create(std::shared_ptr<VirtioDevice> device,
                                                       const GuestMemory& mem, Interrupt* irq,
                                                       EventLoop* loop, uint64_t mmio_base);
  ~MmioTransport() override;
  MmioTransport(const MmioTransport&) = delete;
  MmioTransport& operator=(const MmioTransport&) = delete;

  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;

  // Registers one ioeventfd per queue on mmio_base + QueueNotify (4 bytes, datamatch = index).
  Status register_ioevents(IoEventRegistrar& registrar) const;
  const EventFd& queue_event(uint16_t index) const { return notify_[index]; }
  size_t queue_count() const { return max_sizes_.size(); }

  uint64_t mmio_base() const { return base_; }
  // Device status as the driver reads it (DEVICE_NEEDS_RESET included).
  uint32_t status() const;
  uint32_t interrupt_status() const { return interrupt_status_.load(); }
  uint64_t acked_features() const;
  const GuestErrorCounters& errors() const { return errors_; }
  VirtioDevice& device() { return *device_; }

  // Snapshot (mmio_transport_state.cpp): the register file, each queue's registers and cursors,
  // and the device's own part, as versioned little-endian bytes. Called with the vCPUs paused;
  // refused while a request is in flight (VirtioDevice::save finishes its own first).
  static constexpr uint32_t kStateVersion = 1;
  Result<std::vector<uint8_t>> save_state();
  // Applies saved state to a transport the guest has not touched (freshly built, before any vCPU
  // runs). Everything is validated as if the guest had just written the registers in order
  // (docs/security.md #22): a status the state machine cannot reach, features not offered, a
  // ready queue that QueueReady would refuse (size, alignment, rings outside RAM or
  // overlapping), or a device part that does not fit this device's configuration is an error
  // and leaves the transport and device reset. With DRIVER_OK the device is re-activated with
  // the restored queues, and every ready queue is notified once, so buffers the driver made
  // available before the snapshot are not left waiting for a notification already spent.
  Status restore_state(std::span<const uint8_t> bytes);

 private:
  // The driver's view of one queue, as written (virtio 1.2 §4.2.2).
  struct QueueRegs {
    uint32_t num = 0;
    bool ready = false;
    uint64_t desc = 0, driver = 0, device = 0;
  };

  MmioTransport(std::shared_ptr<VirtioDevice> device, const GuestMemory& mem, Interrupt* irq,
                EventLoop* loop, uint64_t base);

  // DeviceSignals (lock-free; called by the device from any thread).
  void signal_used(uint16_t queue) override;
  void signal_config_change() override;
  void report_needs_reset(const Error& why) override;

  // All below run with mu_ held.
  uint32_t read_register(MmioReg reg);
  void write_register(MmioReg reg, uint32_t value);
  void write_queue_register(MmioReg reg, uint32_t value);
  void write_status(uint32_t value);
  bool negotiate_features();
  void activate();
  void reset_locked();
  void notify(uint32_t index);
  QueueState queue_state(uint16_t index, bool for_activation) const;
  QueueRegs* selected_queue();
  // Registers the notify handlers of the ready queues on loop_ (after the device is active).
  Status watch_queues();
  void note_guest_error(std::atomic<uint64_t>& counter, const char* fmt, ...)
      __attribute__((format(printf, 3, 4)));
  // Registers are 32 bits wide and aligned (virtio 1.2 §4.2.2.2): any other access is counted
  // and ignored (false). `kind` is "read" or "write".
  bool register_access_ok(uint64_t offset, size_t size, const char* kind);

  std::shared_ptr<VirtioDevice> device_;
  const GuestMemory* mem_;
  Interrupt* irq_;
  EventLoop* loop_;
  uint64_t base_;
  uint64_t offered_features_;
  std::vector<uint16_t> max_sizes_;
  std::vector<EventFd> notify_;  // one per queue, EFD_NONBLOCK

  mutable std::mutex mu_;
  uint32_t status_ = 0;  // without DEVICE_NEEDS_RESET, which lives in needs_reset_
  uint32_t device_features_sel_ = 0, driver_features_sel_ = 0, queue_sel_ = 0;
  uint64_t driver_features_ = 0;
  std::vector<QueueRegs> queues_;
  bool active_ = false;  // device activated; notify handlers registered on loop_

  std::atomic<bool> needs_reset_{false};     // what the STATUS register shows
  std::atomic<bool> reset_reported_{false};  // report_needs_reset ran since the last reset
  std::atomic<uint32_t> interrupt_status_{0};
  std::atomic<uint32_t> config_generation_{0};
  std::atomic<uint32_t> warnings_left_{8};  // guest mistakes logged at warn level, then debug
  GuestErrorCounters errors_;
};

}  // namespace carapace::virtio
