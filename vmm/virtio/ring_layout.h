// Split-virtqueue layout (virtio 1.2 §2.7): the descriptor table, the driver area ("available
// ring") and the device area ("used ring"), with the byte sizes and offsets the Queue validates
// and uses. Constants come from the kernel's UAPI headers; our own structs are checked against
// them. Everything in the rings is little-endian; carapace runs on x86-64 only.
#pragma once

#include <linux/virtio_config.h>
// The legacy helpers in <linux/virtio_ring.h> (vring_init, ...) are C, not C++ (void* assigned to
// typed pointers); we need only the constants and struct layouts.
#ifndef VIRTIO_RING_NO_LEGACY
#define VIRTIO_RING_NO_LEGACY
#endif
#include <linux/virtio_ring.h>

#include <bit>
#include <cstddef>
#include <cstdint>

#include "common/base/result.h"

namespace carapace::virtio {

static_assert(std::endian::native == std::endian::little, "virtio 1.x rings are little-endian");

// virtio 1.2 §2.7.5: one entry of a descriptor table (the main one or an indirect one).
struct Desc {
  uint64_t addr;
  uint32_t len;
  uint16_t flags;
  uint16_t next;
};
static_assert(sizeof(Desc) == sizeof(vring_desc) && sizeof(Desc) == 16);
static_assert(offsetof(Desc, next) == offsetof(vring_desc, next));

// virtio 1.2 §2.7.8: one used-ring element.
struct UsedElem {
  uint32_t id;
  uint32_t len;
};
static_assert(sizeof(UsedElem) == sizeof(vring_used_elem));

inline constexpr uint16_t kDescFNext = VRING_DESC_F_NEXT;
inline constexpr uint16_t kDescFWrite = VRING_DESC_F_WRITE;
inline constexpr uint16_t kDescFIndirect = VRING_DESC_F_INDIRECT;
inline constexpr uint16_t kAvailFNoInterrupt = VRING_AVAIL_F_NO_INTERRUPT;

// Feature bits the core implements for every device (virtio 1.2 §6).
inline constexpr uint64_t kFVersion1 = 1ull << VIRTIO_F_VERSION_1;
inline constexpr uint64_t kFIndirectDesc = 1ull << VIRTIO_RING_F_INDIRECT_DESC;
inline constexpr uint64_t kFEventIdx = 1ull << VIRTIO_RING_F_EVENT_IDX;

// The largest queue size virtio allows (virtio 1.2 §2.7: "Queue Size ... maximum is 32768").
inline constexpr uint32_t kMaxQueueSize = 32768;

// Alignment of each part (virtio 1.2 §2.7, table "Virtqueue Part Alignment").
inline constexpr uint64_t kDescAlign = VRING_DESC_ALIGN_SIZE;    // 16
inline constexpr uint64_t kAvailAlign = VRING_AVAIL_ALIGN_SIZE;  // 2
inline constexpr uint64_t kUsedAlign = VRING_USED_ALIGN_SIZE;    // 4

// Byte sizes, including the event-idx fields (used_event after the avail ring, avail_event after
// the used ring; virtio 1.2 §2.7.6, §2.7.8), which a driver always lays out.
constexpr uint64_t desc_table_bytes(uint32_t size) {
  return uint64_t{16} * size;
}
constexpr uint64_t avail_ring_bytes(uint32_t size) {
  return 6 + uint64_t{2} * size;
}
constexpr uint64_t used_ring_bytes(uint32_t size) {
  return 6 + uint64_t{8} * size;
}

// Field offsets inside the driver area (avail) and device area (used).
inline constexpr uint64_t kAvailFlags = 0, kAvailIdx = 2, kAvailRing = 4;
inline constexpr uint64_t kUsedFlags = 0, kUsedIdx = 2, kUsedRing = 4;
constexpr uint64_t used_event_offset(uint32_t size) {
  return kAvailRing + uint64_t{2} * size;
}
constexpr uint64_t avail_event_offset(uint32_t size) {
  return kUsedRing + uint64_t{8} * size;
}

// Guest mistakes are Errors of kind kInvalidInput ("bad input from the guest"); host failures keep
// kHost. Devices count the former and never let them take the VMM down.
inline Error guest_error(std::string what) {
  return as_invalid_input(make_error(std::move(what)));
}
inline bool is_guest_error(const Error& e) {
  return e.kind == ErrorKind::kInvalidInput;
}

}  // namespace carapace::virtio
