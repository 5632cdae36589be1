// VirtioDeviceSet: the virtio-mmio devices of one VM. For each device it allocates a 4 KiB MMIO
// window and an IRQ, wires the IRQ as an irqfd and every queue's QueueNotify as an ioeventfd (so
// neither interrupts nor notifications pass through user space), puts the transport on the MMIO
// bus and records the `virtio_mmio.device=` word Linux needs to find it.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "vmm/bus/bus.h"
#include "vmm/devices/fs/virtio_fs.h"
#include "vmm/event/event_loop.h"
#include "vmm/kvm/vm.h"
#include "vmm/machine/device_config.h"
#include "vmm/machine/machine_state.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/virtio/interrupt.h"
#include "vmm/virtio/mmio_slots.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace {

class VirtioDeviceSet {
 public:
  // All references must outlive the set; the event loop must be stopped before the set dies.
  VirtioDeviceSet(Vm& vm, const GuestMemory& mem, IoBus& mmio_bus, EventLoop& loop)
      : vm_(vm), mem_(mem), mmio_bus_(mmio_bus), loop_(loop) {}

  // Builds every configured device (drives, nets, vsock, rng, filesystems, in that order) and
  // attaches it. Each virtio-fs device is served on its own loop, `fs_loops[i]` for
  // `config.filesystems[i]`: its file server blocks on host file I/O, which must not hold up the
  // other devices (vmm/devices/fs/README.md, Threads). The loops must outlive the set's
  // transports and be stopped before the set dies, as the shared loop.
  Status add_configured(const DeviceConfigs& config, std::span<EventLoop* const> fs_loops = {});
  // `loop`: where the device's queue notifications are served; null for the shared loop.
  Status attach(std::shared_ptr<virtio::VirtioDevice> device, const std::string& name,
                EventLoop* loop = nullptr);

  // Words to append to the kernel command line, one per device.
  const std::vector<std::string>& cmdline_words() const { return cmdline_words_; }
  const std::vector<std::shared_ptr<virtio::MmioTransport>>& transports() const {
    return transports_;
  }

  // The virtio-fs devices, in slot order (which is `--fs` order); they live as long as the set.
  std::vector<VirtioFs*> filesystems() const;

  // Each device's host-side counters, named "<kind><index>_<counter>" (blk0_errors,
  // fs0_requests, ...).
  void add_counters(std::map<std::string, uint64_t>& out) const;

  // Snapshot of every device, one blob per MMIO slot in slot order; the VM must be paused.
  Result<std::vector<VirtioDeviceBlob>> save_state();
  // Applies saved blobs to the devices just built for a restore, before any vCPU runs. Each
  // slot needs exactly one blob, of a known version, for a device of the same type; the
  // restoring VM must have as many devices as the snapshot (docs/security.md #22).
  Status restore_state(std::span<const VirtioDeviceBlob> blobs);

 private:
  Vm& vm_;
  const GuestMemory& mem_;
  IoBus& mmio_bus_;
  EventLoop& loop_;
  virtio::MmioSlotAllocator slots_;
  // Interrupts are declared before transports: a transport uses its interrupt until it dies.
  std::vector<std::unique_ptr<virtio::EventFdInterrupt>> interrupts_;
  std::vector<std::shared_ptr<virtio::MmioTransport>> transports_;
  std::vector<std::string> cmdline_words_;
};

}  // namespace carapace
