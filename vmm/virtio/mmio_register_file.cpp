// MmioTransport's register file: reads and writes of the 32-bit registers below the
// configuration space (virtio 1.2 §4.2.2), with the queue registers captured per queue. The
// status state machine, activation and notifications live in mmio_transport.cpp.
#include <string>

#include "vmm/virtio/mmio_transport.h"
#include "vmm/virtio/ring_layout.h"

namespace carapace::virtio {

namespace {

// One 32-bit half of a 64-bit register pair; `sel` beyond 1 reads 0.
uint32_t half(uint64_t v, uint32_t sel) {
  return sel == 0 ? static_cast<uint32_t>(v) : sel == 1 ? static_cast<uint32_t>(v >> 32) : 0;
}
void set_half(uint64_t& v, bool high, uint32_t value) {
  if (high)
    v = (v & 0xffffffffull) | (uint64_t{value} << 32);
  else
    v = (v & ~0xffffffffull) | value;
}

}  // namespace

MmioTransport::QueueRegs* MmioTransport::selected_queue() {
  return queue_sel_ < queues_.size() ? &queues_[queue_sel_] : nullptr;
}

uint32_t MmioTransport::read_register(MmioReg reg) {
  const QueueRegs* q = selected_queue();
  switch (reg) {
    case MmioReg::kMagicValue:
      return kMmioMagic;
    case MmioReg::kVersion:
      return kMmioVersion;
    case MmioReg::kDeviceId:
      return device_->device_type();
    case MmioReg::kVendorId:
      return kMmioVendorId;
    case MmioReg::kDeviceFeatures:
      return half(offered_features_, device_features_sel_);
    // docs/security.md #8: a QueueSel past the device's queues reads as "no queue".
    case MmioReg::kQueueNumMax:
      return q ? max_sizes_[queue_sel_] : 0;
    case MmioReg::kQueueNum:
      return q ? q->num : 0;
    case MmioReg::kQueueReady:
      return q && q->ready ? 1 : 0;
    case MmioReg::kQueueDescLow:
      return q ? half(q->desc, 0) : 0;
    case MmioReg::kQueueDescHigh:
      return q ? half(q->desc, 1) : 0;
    case MmioReg::kQueueDriverLow:
      return q ? half(q->driver, 0) : 0;
    case MmioReg::kQueueDriverHigh:
      return q ? half(q->driver, 1) : 0;
    case MmioReg::kQueueDeviceLow:
      return q ? half(q->device, 0) : 0;
    case MmioReg::kQueueDeviceHigh:
      return q ? half(q->device, 1) : 0;
    case MmioReg::kInterruptStatus:
      return interrupt_status_.load();
    case MmioReg::kStatus:
      return status_ | (needs_reset_.load() ? kNeedsReset : 0);
    // virtio 1.2 §4.2.2: a non-existent shared memory region has length and base all ones.
    case MmioReg::kShmLenLow:
    case MmioReg::kShmLenHigh:
    case MmioReg::kShmBaseLow:
    case MmioReg::kShmBaseHigh:
      return 0xffffffff;
    case MmioReg::kConfigGeneration:
      return config_generation_.load();
    default:
      return 0;  // write-only or unassigned
  }
}

void MmioTransport::write_register(MmioReg reg, uint32_t value) {
  switch (reg) {
    case MmioReg::kDeviceFeaturesSel:
      device_features_sel_ = value;
      return;
    case MmioReg::kDriverFeaturesSel:
      driver_features_sel_ = value;
      return;
    case MmioReg::kDriverFeatures:
      // Features are fixed once FEATURES_OK is set (virtio 1.2 §3.1.1).
      if ((status_ & kFeaturesOk) || driver_features_sel_ > 1) {
        note_guest_error(errors_.bad_register_access, "driver features write ignored");
        return;
      }
      set_half(driver_features_, driver_features_sel_ == 1, value);
      return;
    case MmioReg::kQueueSel:
      queue_sel_ = value;
      return;
    case MmioReg::kQueueNum:
    case MmioReg::kQueueReady:
    case MmioReg::kQueueDescLow:
    case MmioReg::kQueueDescHigh:
    case MmioReg::kQueueDriverLow:
    case MmioReg::kQueueDriverHigh:
    case MmioReg::kQueueDeviceLow:
    case MmioReg::kQueueDeviceHigh:
      write_queue_register(reg, value);
      return;
    case MmioReg::kQueueNotify:
      notify(value);
      return;
    case MmioReg::kInterruptAck:
      interrupt_status_.fetch_and(~value);
      return;
    case MmioReg::kStatus:
      write_status(value);
      return;
    case MmioReg::kShmSel:
      return;  // no regions to select
    default:
      note_guest_error(errors_.bad_register_access,
                       "write to read-only or unassigned register 0x%llx",
                       static_cast<unsigned long long>(reg));
      return;
  }
}

void MmioTransport::write_queue_register(MmioReg reg, uint32_t value) {
  QueueRegs* q = selected_queue();
  if (q == nullptr) {  // docs/security.md #8
    note_guest_error(errors_.bad_register_access, "queue register write for missing queue %u",
                     queue_sel_);
    return;
  }
  // docs/security.md #7: frozen after DRIVER_OK; only QueueReady = 0 may touch a ready queue.
  const bool unready = reg == MmioReg::kQueueReady && value == 0;
  if ((status_ & kDriverOk) || (q->ready && !unready)) {
    note_guest_error(errors_.bad_register_access, "queue %u register write while live ignored",
                     queue_sel_);
    return;
  }
  switch (reg) {
    case MmioReg::kQueueNum:
      q->num = value;
      return;
    case MmioReg::kQueueDescLow:
      set_half(q->desc, false, value);
      return;
    case MmioReg::kQueueDescHigh:
      set_half(q->desc, true, value);
      return;
    case MmioReg::kQueueDriverLow:
      set_half(q->driver, false, value);
      return;
    case MmioReg::kQueueDriverHigh:
      set_half(q->driver, true, value);
      return;
    case MmioReg::kQueueDeviceLow:
      set_half(q->device, false, value);
      return;
    case MmioReg::kQueueDeviceHigh:
      set_half(q->device, true, value);
      return;
    default:
      break;
  }
  if (value == 0) {
    q->ready = false;
    return;
  }
  // docs/security.md #6, #10: refuse a bad ring here, so the driver reads QueueReady back as 0.
  auto valid = Queue::validate(*mem_, queue_state(static_cast<uint16_t>(queue_sel_), false),
                               max_sizes_[queue_sel_]);
  if (!valid.ok()) {
    note_guest_error(errors_.refused_queue, "queue %u refused: %s", queue_sel_,
                     valid.error().message.c_str());
    return;
  }
  q->ready = true;
}

QueueState MmioTransport::queue_state(uint16_t index, bool for_activation) const {
  const QueueRegs& r = queues_[index];
  QueueState s;
  // A QueueNum that does not fit 16 bits is invalid; 0 is refused by validation.
  s.size = r.num > 0xffff ? 0 : static_cast<uint16_t>(r.num);
  s.ready = for_activation ? r.ready : true;
  s.desc_table = r.desc;
  s.avail_ring = r.driver;
  s.used_ring = r.device;
  s.event_idx = driver_features_ & kFEventIdx;
  s.indirect = driver_features_ & kFIndirectDesc;
  return s;
}

}  // namespace carapace::virtio
