// Bringing a device up (virtio 1.2 §3.1.1) with its queues, shared by every driver and scenario.
#pragma once

#include <cstdint>

#include "guest/testguest/boot_info.h"
#include "guest/testguest/virtio/virtio_mmio.h"
#include "guest/testguest/virtio/virtqueue.h"

namespace testguest::virtio {

// How long (TSC cycles: 6-30 s) a driver waits for the device to answer. Generous: a loaded host
// can starve the VMM's vCPU and event-loop threads for seconds, and only a broken device waits
// this long.
inline constexpr uint64_t kDeviceTimeout = 30'000'000'000;

// The start of every virtio scenario: the DMA arena and the device list from the command line.
const char* start_virtio(const BootInfo& boot, DeviceList& list);

// The start of a scenario that drives one device: start_virtio, then the first device of `type`
// in `info`. A missing device is an error that names the VMM flag which adds one.
const char* start_virtio_device(const BootInfo& boot, DeviceList& list, uint32_t type,
                                const DeviceInfo*& info);

struct InitResult {
  const char* error;  // nullptr on success
  uint64_t offered;   // all 64 feature bits the device offered
  uint64_t accepted;  // what was negotiated (VERSION_1 included)
};

// Reset, ACKNOWLEDGE, DRIVER, features (`wanted` & offered, plus VERSION_1), FEATURES_OK, queues
// 0..n-1 (each up to `queue_size` entries; EVENT_IDX used when `wanted` has it and the device
// offers it), DRIVER_OK, then one Status read to check the device did not refuse activation.
InitResult init_device(Device& dev, uint64_t wanted, Virtqueue* queues, int n, uint16_t queue_size);

// A single-segment helper for drivers: `n` bytes at `p`.
inline Buf buf_out(const volatile void* p, uint32_t n) {
  return Buf{reinterpret_cast<uint64_t>(p), n, false};
}
inline Buf buf_in(volatile void* p, uint32_t n) {
  return Buf{reinterpret_cast<uint64_t>(p), n, true};
}

}  // namespace testguest::virtio
