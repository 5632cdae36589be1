// The driver side of one split virtqueue (virtio 1.2 §2.7): descriptor table, driver area (avail
// ring) and device area (used ring) in DMA memory, a free list of descriptors, and completions
// collected by polling the used ring (the guest runs with the device interrupts masked).
//
// Ordering (virtio 1.2 §2.7.13): descriptors and avail-ring entries are written before avail.idx
// is published with a release store; used elements are read after an acquire load of used.idx.
// On x86 both are plain moves plus a compiler barrier. Deciding whether to notify reads the
// device's suppression field after publishing avail.idx: a store then a load, so an mfence.
#pragma once

#include <cstdint>

#include "guest/testguest/virtio/virtio_mmio.h"

namespace testguest::virtio {

struct Desc {
  uint64_t addr;
  uint32_t len;
  uint16_t flags;
  uint16_t next;
};
static_assert(sizeof(Desc) == 16);

inline constexpr uint16_t kDescNext = 1;
inline constexpr uint16_t kDescWrite = 2;
inline constexpr uint16_t kDescIndirect = 4;
inline constexpr uint16_t kAvailNoInterrupt = 1;
inline constexpr uint16_t kUsedNoNotify = 1;

struct UsedElem {
  uint32_t id;
  uint32_t len;
};

// One buffer of a chain: readable by the device, or (device_writes) writable by it.
struct Buf {
  uint64_t addr;
  uint32_t len;
  bool device_writes;
};

class Virtqueue {
 public:
  // The largest queue this driver sets up (the rings for it are allocated once).
  static constexpr uint16_t kMaxSize = 1024;

  // Selects queue `index` of `dev`, sizes it min(QueueNumMax, want_size) (a power of two), lays
  // the rings out (allocated on the first call, zeroed on every call) and sets QueueReady. With
  // `event_idx` the driver uses VIRTIO_RING_F_EVENT_IDX (which must have been negotiated); without
  // it, it asks for no used-buffer interrupts (VRING_AVAIL_F_NO_INTERRUPT). Returns nullptr or why
  // the queue could not be set up.
  const char* setup(const Device& dev, uint16_t index, uint16_t want_size, bool event_idx = false);

  uint16_t size() const { return size_; }
  uint16_t index() const { return index_; }
  uint16_t free_count() const { return free_count_; }
  uint16_t in_flight() const { return static_cast<uint16_t>(size_ - free_count_); }

  // Builds a chain of `n` buffers and places its head in the avail ring, not yet visible to the
  // device. Returns the head, or -1 without enough free descriptors.
  int add(const Buf* bufs, int n);
  // Publishes everything added and notifies the device if it asked for it.
  void kick();
  // The next used element, if any; frees the chain's descriptors.
  bool pop_used(uint32_t& head, uint32_t& len);
  // Polls for the next used element for up to `timeout_cycles` TSC cycles.
  bool wait_used(uint32_t& head, uint32_t& len, uint64_t timeout_cycles);
  // add + kick + wait for that chain (other completions arriving first are an error). Returns the
  // used length, or -1 on timeout or a different head.
  int64_t submit_and_wait(const Buf* bufs, int n, uint64_t timeout_cycles);

  // Raw access for the hostile scenario: a descriptor, taking descriptors out of the free list,
  // putting an arbitrary head into the avail ring, publishing an arbitrary avail.idx, notifying.
  Desc& desc(uint16_t i) { return desc_[i]; }
  // Takes `n` descriptors and records them as one chain of `head` for freeing (the caller fills in
  // the descriptors, and may point their `next` anywhere). Returns the head or -1.
  int take_chain(int n, uint16_t* ids);
  void push_avail(uint16_t head);
  void publish_avail_idx(uint16_t idx);
  uint16_t avail_idx() const { return avail_shadow_; }
  void notify() const { dev_->write(kQueueNotify, index_); }
  uint16_t used_idx() const;
  uint64_t notifies() const { return notifies_; }
  uint64_t desc_addr() const;
  uint64_t avail_addr() const;
  uint64_t used_addr() const;

 private:
  void free_chain(uint16_t head);

  const Device* dev_ = nullptr;
  uint16_t index_ = 0;
  uint16_t size_ = 0;
  bool event_idx_ = false;
  Desc* desc_ = nullptr;
  volatile uint16_t* avail_ = nullptr;  // flags, idx, ring[size], used_event
  volatile uint8_t* used_ = nullptr;    // flags, idx, ring[size] of UsedElem, avail_event
  uint16_t* free_ = nullptr;            // stack of free descriptor ids
  uint16_t free_count_ = 0;
  uint16_t* chain_next_ = nullptr;  // the driver's own copy of each chain's links
  uint16_t* chain_len_ = nullptr;   // per head: descriptors in its chain (0: not in flight)
  uint16_t avail_shadow_ = 0;       // avail.idx including entries not yet published
  uint16_t published_ = 0;          // avail.idx the device has seen
  uint16_t last_used_ = 0;          // next used.idx slot to consume
  uint64_t notifies_ = 0;
};

}  // namespace testguest::virtio
