// The driver side of the virtio-mmio version 2 transport (virtio 1.2 §4.2): device discovery from
// the kernel command line, the register file, feature negotiation and the status sequence
// (virtio 1.2 §3.1.1). Every register access is an exit to the VMM (~40-90 us on PVM hosts), so
// the drivers read each register once and rely on the reset values of the selectors.
#pragma once

#include <cstdint>

#include "guest/testguest/virtio/mmio_access.h"

namespace testguest::virtio {

// Register offsets (virtio 1.2 §4.2.2).
enum Reg : uint32_t {
  kMagicValue = 0x000,
  kVersion = 0x004,
  kDeviceId = 0x008,
  kVendorId = 0x00c,
  kDeviceFeatures = 0x010,
  kDeviceFeaturesSel = 0x014,
  kDriverFeatures = 0x020,
  kDriverFeaturesSel = 0x024,
  kQueueSel = 0x030,
  kQueueNumMax = 0x034,
  kQueueNum = 0x038,
  kQueueReady = 0x044,
  kQueueNotify = 0x050,
  kInterruptStatus = 0x060,
  kInterruptAck = 0x064,
  kStatus = 0x070,
  kQueueDescLow = 0x080,
  kQueueDescHigh = 0x084,
  kQueueDriverLow = 0x090,
  kQueueDriverHigh = 0x094,
  kQueueDeviceLow = 0x0a0,
  kQueueDeviceHigh = 0x0a4,
  kConfigGeneration = 0x0fc,
  kConfig = 0x100,
};

inline constexpr uint32_t kMagic = 0x74726976;  // "virt"
inline constexpr uint64_t kWindowSize = 0x1000;

// Device status bits (virtio 1.2 §2.1).
inline constexpr uint32_t kStatusAcknowledge = 1;
inline constexpr uint32_t kStatusDriver = 2;
inline constexpr uint32_t kStatusDriverOk = 4;
inline constexpr uint32_t kStatusFeaturesOk = 8;
inline constexpr uint32_t kStatusNeedsReset = 0x40;
inline constexpr uint32_t kStatusFailed = 0x80;

// Transport feature bits (virtio 1.2 §6).
inline constexpr uint64_t kFIndirectDesc = 1ull << 28;
inline constexpr uint64_t kFEventIdx = 1ull << 29;
inline constexpr uint64_t kFVersion1 = 1ull << 32;

// Device types (virtio 1.2 §5).
inline constexpr uint32_t kTypeNet = 1;
inline constexpr uint32_t kTypeBlock = 2;
inline constexpr uint32_t kTypeRng = 4;
inline constexpr uint32_t kTypeVsock = 19;
inline constexpr uint32_t kTypeFs = 26;
const char* type_name(uint32_t device_id);
// "no virtio-<name> device (run with --<flag>)": a scenario's error when `device_id` is missing.
const char* missing_device_error(uint32_t device_id);

// One `virtio_mmio.device=<size>@<base>:<irq>` word, identified by its registers.
struct DeviceInfo {
  uint64_t base;
  uint64_t size;
  uint32_t irq;
  uint32_t device_id;  // 0: the window answered with a bad magic or version (not usable)
  uint32_t version;
};

inline constexpr int kMaxDevices = 16;

struct DeviceList {
  DeviceInfo devices[kMaxDevices];
  int count;
  // The n-th device of `type` (0-based), or nullptr.
  const DeviceInfo* find(uint32_t type, int nth = 0) const;
};

// Parses the command line's virtio_mmio.device= words and reads MagicValue, Version and DeviceID
// of each (3 exits per device). Prints one `testguest: virtio ...` line per device when `verbose`.
// Returns nullptr or why a word could not be parsed.
const char* discover(const char* cmdline, DeviceList& list, bool verbose = true);

// One device window.
class Device {
 public:
  Device() = default;
  explicit Device(const DeviceInfo& info) : base_(info.base), info_(info) {}

  const DeviceInfo& info() const { return info_; }
  uint64_t base() const { return base_; }
  uint32_t read(uint32_t reg) const { return mmio_read<uint32_t>(base_ + reg); }
  void write(uint32_t reg, uint32_t v) const { mmio_write<uint32_t>(base_ + reg, v); }

  // Configuration space (any width is allowed there, virtio 1.2 §4.2.2).
  uint8_t config8(uint32_t off) const { return mmio_read<uint8_t>(base_ + kConfig + off); }
  uint16_t config16(uint32_t off) const { return mmio_read<uint16_t>(base_ + kConfig + off); }
  uint32_t config32(uint32_t off) const { return read(kConfig + off); }
  // Two 32-bit halves; a 64-bit field may change between them, which the config generation
  // would catch (virtio 1.2 §2.5.1) — none of our devices changes config at run time.
  uint64_t config64(uint32_t off) const {
    return config32(off) | (uint64_t{config32(off + 4)} << 32);
  }

  // Steps 1-4 of virtio 1.2 §3.1.1: reset, ACKNOWLEDGE, DRIVER, read the 64 offered feature bits.
  uint64_t begin_init();
  // Steps 5-6: accept `wanted & offered` plus VERSION_1, set FEATURES_OK and check it stuck.
  // Returns the accepted features, or 0 when the device refused them.
  uint64_t negotiate(uint64_t offered, uint64_t wanted);
  // Step 8 (queues set up in between by Virtqueue::setup).
  void driver_ok() { write(kStatus, status_ |= kStatusDriverOk); }
  void reset() {
    write(kStatus, 0);
    status_ = 0;
  }
  uint32_t status() const { return read(kStatus); }
  // The status the driver last wrote.
  uint32_t driver_status() const { return status_; }

 private:
  uint64_t base_ = 0;
  DeviceInfo info_{};
  uint32_t status_ = 0;
};

}  // namespace testguest::virtio
