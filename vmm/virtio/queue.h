// Queue: one split virtqueue on the device side (virtio 1.2 §2.7).
//
// The driver's configuration (size, ring addresses, ready) is plain data, QueueState. A Queue is
// built from it by Queue::activate, which validates everything once (docs/security.md #6, #10):
// size a non-zero power of two no larger than the device's maximum, each ring aligned, wholly
// inside one RAM region (event-idx fields included) and not overlapping the other two. After that
// the ring bytes are reached through spans bounded at activation; ring indices are always taken
// modulo the size. Restoring a snapshot goes through the same function (docs/security.md #22).
//
// A Queue belongs to one device and is used under that device's lock; it is not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/virtio/descriptor_chain.h"

namespace carapace::virtio {

// Everything needed to rebuild a queue: what the driver wrote plus the device's two cursors.
struct QueueState {
  uint16_t size = 0;  // QueueNum as written (validated against the maximum at activation)
  bool ready = false;
  uint64_t desc_table = 0;  // QueueDesc
  uint64_t avail_ring = 0;  // QueueDriver
  uint64_t used_ring = 0;   // QueueDevice
  uint16_t next_avail = 0;  // next avail-ring slot the device will read
  uint16_t next_used = 0;   // next used-ring slot the device will write (== used.idx)
  bool event_idx = false;   // VIRTIO_RING_F_EVENT_IDX negotiated
  bool indirect = false;    // VIRTIO_RING_F_INDIRECT_DESC negotiated

  bool operator==(const QueueState&) const = default;
};

// Counters of guest mistakes seen by one queue (read under the device lock).
struct QueueCounters {
  uint64_t invalid_chains = 0;  // refused chains, completed with length 0
  uint64_t broken = 0;          // ring corruption that needs a device reset
};

class Queue {
 public:
  // A queue the driver did not make ready: pop() finds nothing, add_used() refuses.
  Queue() = default;

  // Checks `state` against `mem` and `max_size` (virtio 1.2 §2.7, §4.2.2). A state with ready ==
  // false gives a not-ready Queue. Errors are guest errors (kInvalidInput).
  static Result<Queue> activate(const GuestMemory& mem, const QueueState& state, uint16_t max_size);
  // The validation alone, for QueueReady writes (the transport refuses a bad ring there).
  static Status validate(const GuestMemory& mem, const QueueState& state, uint16_t max_size);

  bool ready() const { return state_.ready; }
  uint16_t size() const { return state_.size; }
  // Plain data for snapshots; restore with activate().
  QueueState save() const { return state_; }

  // The next available chain, validated whole (see DescriptorChain), or nullopt when the driver
  // has made nothing new available, or when `size` chains are already popped and not yet
  // returned (a guest cannot make the device hold more; docs/security.md #12). A chain that breaks
  // the rules is returned to the used ring with length 0 and counted; the device never sees it.
  // An error means the ring itself is corrupt (avail.idx more than `size` ahead, a head index out
  // of range): the device must go NEEDS_RESET. The error is sticky: nothing is processed twice
  // (docs/security.md #4).
  Result<std::optional<DescriptorChain>> pop();
  // Gives back the chain most recently popped (a device that found no room for it, e.g. net RX).
  void undo_pop();

  // Writes the used element, then publishes used.idx with release ordering (virtio 1.2 §2.7.8).
  // `len` is the number of bytes written into the chain's writable part.
  Status add_used(uint16_t head, uint32_t len);

  // Whether the driver wants a used-buffer notification for what add_used() published since the
  // last call (virtio 1.2 §2.7.10: VRING_AVAIL_F_NO_INTERRUPT, or used_event with EVENT_IDX).
  bool needs_notification();
  // Asks the driver for a notification at the next available buffer (with EVENT_IDX: writes
  // avail_event = next_avail; virtio 1.2 §2.7.10) and then re-reads avail.idx: true when buffers
  // arrived meanwhile, so the device must pop again before sleeping. Typical device loop:
  //   do { while (auto c = TRY(q.pop())) {...} } while (q.enable_notification());
  //   if (q.needs_notification()) signals.signal_used(index);
  bool enable_notification();
  // The driver's avail.idx now (acquire): how many buffers it has ever made available, mod 2^16.
  uint16_t avail_idx() const { return read_avail_idx(); }
  // Asks for a notification when the driver makes its next buffer available, however many are
  // still unread (with EVENT_IDX: avail_event = avail.idx; without it the driver always
  // notifies). For a device that waits for the driver to give a buffer back (virtio 1.2 §2.7.10).
  void notify_at_next_avail();

  // Popped chains not yet returned through add_used().
  uint16_t in_flight() const { return static_cast<uint16_t>(state_.next_avail - state_.next_used); }
  const QueueCounters& counters() const { return counters_; }

 private:
  Queue(const GuestMemory& mem, const QueueState& state, std::span<uint8_t> desc,
        std::span<uint8_t> avail, std::span<uint8_t> used)
      : mem_(&mem), state_(state), desc_(desc), avail_(avail), used_(used) {}

  uint16_t read_avail_idx() const;  // acquire
  uint16_t avail_u16(uint64_t offset) const;
  void write_used_u16(uint64_t offset, uint16_t v, int order);

  const GuestMemory* mem_ = nullptr;
  QueueState state_;
  std::span<uint8_t> desc_, avail_, used_;  // bounded at activation
  uint16_t signalled_used_ = 0;             // next_used at the last needs_notification()
  uint32_t unsignalled_ = 0;                // add_used() calls since then
  bool broken_ = false;
  QueueCounters counters_;
};

}  // namespace carapace::virtio
