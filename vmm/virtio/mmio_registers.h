// The virtio-mmio version 2 register file (virtio 1.2 §4.2.2), named. Offsets are checked against
// the kernel's <linux/virtio_mmio.h>.
#pragma once

#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>

#include <cstdint>

namespace carapace::virtio {

enum class MmioReg : uint64_t {
  kMagicValue = 0x000,         // R  "virt"
  kVersion = 0x004,            // R  2
  kDeviceId = 0x008,           // R  virtio device type
  kVendorId = 0x00c,           // R
  kDeviceFeatures = 0x010,     // R  32 bits selected by DeviceFeaturesSel
  kDeviceFeaturesSel = 0x014,  // W
  kDriverFeatures = 0x020,     // W  32 bits selected by DriverFeaturesSel
  kDriverFeaturesSel = 0x024,  // W
  kQueueSel = 0x030,           // W
  kQueueNumMax = 0x034,        // R  0 when QueueSel names no queue
  kQueueNum = 0x038,           // W
  kQueueReady = 0x044,         // RW
  kQueueNotify = 0x050,        // W  value: queue index
  kInterruptStatus = 0x060,    // R  bit 0 used buffer, bit 1 configuration change
  kInterruptAck = 0x064,       // W
  kStatus = 0x070,             // RW device status (virtio 1.2 §2.1)
  kQueueDescLow = 0x080,       // W
  kQueueDescHigh = 0x084,      // W
  kQueueDriverLow = 0x090,     // W  available ring
  kQueueDriverHigh = 0x094,    // W
  kQueueDeviceLow = 0x0a0,     // W  used ring
  kQueueDeviceHigh = 0x0a4,    // W
  kShmSel = 0x0ac,             // W
  kShmLenLow = 0x0b0,          // R  all ones: no shared memory regions
  kShmLenHigh = 0x0b4,         // R
  kShmBaseLow = 0x0b8,         // R
  kShmBaseHigh = 0x0bc,        // R
  kQueueReset = 0x0c0,         // RW only with VIRTIO_F_RING_RESET (not offered): reads 0
  kConfigGeneration = 0x0fc,   // R
  kConfig = 0x100,             // device configuration space, any width
};

inline constexpr uint32_t kMmioMagic = 0x74726976;     // "virt", little-endian
inline constexpr uint32_t kMmioVersion = 2;            // virtio 1.x ("modern") register layout
inline constexpr uint32_t kMmioVendorId = 0x50524143;  // "CARP"
inline constexpr uint64_t kMmioWindowSize = 0x1000;    // one 4 KiB page per device
inline constexpr uint32_t kIntUsedBuffer = VIRTIO_MMIO_INT_VRING;
inline constexpr uint32_t kIntConfigChange = VIRTIO_MMIO_INT_CONFIG;

// Device status bits (virtio 1.2 §2.1).
inline constexpr uint32_t kAcknowledge = VIRTIO_CONFIG_S_ACKNOWLEDGE;
inline constexpr uint32_t kDriver = VIRTIO_CONFIG_S_DRIVER;
inline constexpr uint32_t kDriverOk = VIRTIO_CONFIG_S_DRIVER_OK;
inline constexpr uint32_t kFeaturesOk = VIRTIO_CONFIG_S_FEATURES_OK;
inline constexpr uint32_t kNeedsReset = VIRTIO_CONFIG_S_NEEDS_RESET;
inline constexpr uint32_t kFailed = VIRTIO_CONFIG_S_FAILED;

constexpr uint64_t offset_of(MmioReg r) {
  return static_cast<uint64_t>(r);
}

static_assert(offset_of(MmioReg::kMagicValue) == VIRTIO_MMIO_MAGIC_VALUE);
static_assert(offset_of(MmioReg::kVersion) == VIRTIO_MMIO_VERSION);
static_assert(offset_of(MmioReg::kDeviceId) == VIRTIO_MMIO_DEVICE_ID);
static_assert(offset_of(MmioReg::kVendorId) == VIRTIO_MMIO_VENDOR_ID);
static_assert(offset_of(MmioReg::kDeviceFeatures) == VIRTIO_MMIO_DEVICE_FEATURES);
static_assert(offset_of(MmioReg::kDeviceFeaturesSel) == VIRTIO_MMIO_DEVICE_FEATURES_SEL);
static_assert(offset_of(MmioReg::kDriverFeatures) == VIRTIO_MMIO_DRIVER_FEATURES);
static_assert(offset_of(MmioReg::kDriverFeaturesSel) == VIRTIO_MMIO_DRIVER_FEATURES_SEL);
static_assert(offset_of(MmioReg::kQueueSel) == VIRTIO_MMIO_QUEUE_SEL);
static_assert(offset_of(MmioReg::kQueueNumMax) == VIRTIO_MMIO_QUEUE_NUM_MAX);
static_assert(offset_of(MmioReg::kQueueNum) == VIRTIO_MMIO_QUEUE_NUM);
static_assert(offset_of(MmioReg::kQueueReady) == VIRTIO_MMIO_QUEUE_READY);
static_assert(offset_of(MmioReg::kQueueNotify) == VIRTIO_MMIO_QUEUE_NOTIFY);
static_assert(offset_of(MmioReg::kInterruptStatus) == VIRTIO_MMIO_INTERRUPT_STATUS);
static_assert(offset_of(MmioReg::kInterruptAck) == VIRTIO_MMIO_INTERRUPT_ACK);
static_assert(offset_of(MmioReg::kStatus) == VIRTIO_MMIO_STATUS);
static_assert(offset_of(MmioReg::kQueueDescLow) == VIRTIO_MMIO_QUEUE_DESC_LOW);
static_assert(offset_of(MmioReg::kQueueDescHigh) == VIRTIO_MMIO_QUEUE_DESC_HIGH);
static_assert(offset_of(MmioReg::kQueueDriverLow) == VIRTIO_MMIO_QUEUE_AVAIL_LOW);
static_assert(offset_of(MmioReg::kQueueDriverHigh) == VIRTIO_MMIO_QUEUE_AVAIL_HIGH);
static_assert(offset_of(MmioReg::kQueueDeviceLow) == VIRTIO_MMIO_QUEUE_USED_LOW);
static_assert(offset_of(MmioReg::kQueueDeviceHigh) == VIRTIO_MMIO_QUEUE_USED_HIGH);
static_assert(offset_of(MmioReg::kShmSel) == VIRTIO_MMIO_SHM_SEL);
static_assert(offset_of(MmioReg::kShmLenLow) == VIRTIO_MMIO_SHM_LEN_LOW);
static_assert(offset_of(MmioReg::kShmLenHigh) == VIRTIO_MMIO_SHM_LEN_HIGH);
static_assert(offset_of(MmioReg::kShmBaseLow) == VIRTIO_MMIO_SHM_BASE_LOW);
static_assert(offset_of(MmioReg::kShmBaseHigh) == VIRTIO_MMIO_SHM_BASE_HIGH);
static_assert(offset_of(MmioReg::kConfigGeneration) == VIRTIO_MMIO_CONFIG_GENERATION);
static_assert(offset_of(MmioReg::kConfig) == VIRTIO_MMIO_CONFIG);

}  // namespace carapace::virtio
