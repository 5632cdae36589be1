#include "vmm/virtio/queue.h"

#include <atomic>
#include <cstring>
#include <string>

#include "common/base/log.h"
#include "vmm/virtio/ring_layout.h"

namespace carapace::virtio {

namespace {

struct Range {
  uint64_t start, len;
};

bool overlap(Range a, Range b) {
  // Both ranges were checked to lie in RAM, so start + len cannot wrap.
  return a.start < b.start + b.len && b.start < a.start + a.len;
}

Error queue_error(const std::string& why) {
  return guest_error("virtqueue: " + why);
}

// Guest ring fields are shared with vCPUs: access them atomically (no torn or cached values).
// Alignment is guaranteed by the ring alignment checks at activation.
uint16_t load_u16(const uint8_t* p, int order) {
  return __atomic_load_n(reinterpret_cast<const uint16_t*>(p), order);
}
void store_u16(uint8_t* p, uint16_t v, int order) {
  __atomic_store_n(reinterpret_cast<uint16_t*>(p), v, order);
}

}  // namespace

Status Queue::validate(const GuestMemory& mem, const QueueState& s, uint16_t max_size) {
  if (!s.ready) return {};
  // docs/security.md #6: no size that would make an index modulo zero or run past a ring.
  if (s.size == 0) return queue_error("size 0");
  if ((s.size & (s.size - 1)) != 0)
    return queue_error("size " + std::to_string(s.size) + " not a power of two");
  if (s.size > max_size || s.size > kMaxQueueSize)
    return queue_error("size " + std::to_string(s.size) + " above maximum " +
                       std::to_string(max_size));
  // docs/security.md #10: alignment (virtio 1.2 §2.7), each ring inside one region, no overlap.
  if (s.desc_table % kDescAlign) return queue_error("descriptor table misaligned");
  if (s.avail_ring % kAvailAlign) return queue_error("driver area misaligned");
  if (s.used_ring % kUsedAlign) return queue_error("device area misaligned");
  const Range desc{s.desc_table, desc_table_bytes(s.size)};
  const Range avail{s.avail_ring, avail_ring_bytes(s.size)};
  const Range used{s.used_ring, used_ring_bytes(s.size)};
  if (!mem.contains(GuestAddress(desc.start), desc.len))
    return queue_error("descriptor table outside guest RAM");
  if (!mem.contains(GuestAddress(avail.start), avail.len))
    return queue_error("driver area outside guest RAM");
  if (!mem.contains(GuestAddress(used.start), used.len))
    return queue_error("device area outside guest RAM");
  if (overlap(desc, avail) || overlap(desc, used) || overlap(avail, used))
    return queue_error("rings overlap");
  return {};
}

Result<Queue> Queue::activate(const GuestMemory& mem, const QueueState& s, uint16_t max_size) {
  if (!s.ready) return Queue();
  TRY_STATUS(validate(mem, s, max_size));
  auto desc = TRY(mem.slice(GuestAddress(s.desc_table), desc_table_bytes(s.size)));
  auto avail = TRY(mem.slice(GuestAddress(s.avail_ring), avail_ring_bytes(s.size)));
  auto used = TRY(mem.slice(GuestAddress(s.used_ring), used_ring_bytes(s.size)));
  Queue q(mem, s, desc, avail, used);
  q.signalled_used_ = s.next_used;
  return q;
}

uint16_t Queue::avail_u16(uint64_t offset) const {
  return load_u16(avail_.data() + offset, __ATOMIC_RELAXED);
}

uint16_t Queue::read_avail_idx() const {
  // Acquire: ring entries the driver wrote before bumping idx are visible (virtio 1.2 §2.7.13).
  return load_u16(avail_.data() + kAvailIdx, __ATOMIC_ACQUIRE);
}

void Queue::write_used_u16(uint64_t offset, uint16_t v, int order) {
  store_u16(used_.data() + offset, v, order);
}

Result<std::optional<DescriptorChain>> Queue::pop() {
  for (;;) {
    if (!ready()) return std::optional<DescriptorChain>();
    if (broken_) return queue_error("queue needs reset");
    const uint16_t avail_idx = read_avail_idx();
    const uint16_t pending = static_cast<uint16_t>(avail_idx - state_.next_avail);
    // docs/security.md #4: the driver cannot have more than `size` buffers outstanding.
    if (pending > state_.size) {
      broken_ = true;
      ++counters_.broken;
      return queue_error("avail.idx " + std::to_string(avail_idx) + " is " +
                         std::to_string(pending) + " ahead of the device (size " +
                         std::to_string(state_.size) + ")");
    }
    // docs/security.md #12: at most `size` chains held by the device at once.
    if (pending == 0 || in_flight() >= state_.size) return std::optional<DescriptorChain>();

    const uint16_t slot = state_.next_avail % state_.size;
    const uint16_t head = avail_u16(kAvailRing + 2 * uint64_t{slot});
    if (head >= state_.size) {
      broken_ = true;
      ++counters_.broken;
      return queue_error("avail ring head " + std::to_string(head) + " out of range");
    }
    ++state_.next_avail;
    auto chain = DescriptorChain::parse(*mem_, desc_, state_.size, head, state_.indirect);
    if (chain.ok()) return std::optional<DescriptorChain>(std::move(chain).value());

    // A bad request, not a broken ring: hand the head back empty and go on (docs/security.md #1).
    ++counters_.invalid_chains;
    LOG_DEBUG("%s", chain.error().describe().c_str());
    TRY_STATUS(add_used(head, 0));
  }
}

void Queue::undo_pop() {
  if (in_flight() > 0) --state_.next_avail;
}

Status Queue::add_used(uint16_t head, uint32_t len) {
  if (!ready()) return make_error("virtqueue: add_used on a queue that is not ready");
  if (head >= state_.size || in_flight() == 0)
    return make_error("virtqueue: add_used of a chain that was not popped");
  const uint16_t slot = state_.next_used % state_.size;
  const UsedElem elem{head, len};
  std::memcpy(used_.data() + kUsedRing + sizeof(UsedElem) * uint64_t{slot}, &elem, sizeof elem);
  ++state_.next_used;
  ++unsignalled_;
  // Release: the element (and the buffer contents) are visible before the index that publishes
  // them (virtio 1.2 §2.7.8.2).
  write_used_u16(kUsedIdx, state_.next_used, __ATOMIC_RELEASE);
  return {};
}

bool Queue::needs_notification() {
  if (!ready()) return false;
  const uint16_t old_used = signalled_used_;
  const uint16_t new_used = state_.next_used;
  const uint32_t added = unsignalled_;
  signalled_used_ = new_used;
  unsignalled_ = 0;
  if (added == 0) return false;
  // Full barrier: our used.idx store must be visible before we read the driver's suppression
  // fields, or both sides could decide not to notify (virtio 1.2 §2.7.10).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!state_.event_idx) return !(avail_u16(kAvailFlags) & kAvailFNoInterrupt);
  // More than 2^16 completions since the last check: the 16-bit arithmetic cannot tell.
  if (added >= 0x10000) return true;
  const uint16_t used_event = avail_u16(used_event_offset(state_.size));
  // vring_need_event(): notify iff used_event lies in [old_used, new_used), modulo 2^16.
  return static_cast<uint16_t>(new_used - used_event - 1) <
         static_cast<uint16_t>(new_used - old_used);
}

bool Queue::enable_notification() {
  if (!ready() || broken_) return false;
  if (state_.event_idx) {
    // Ask to be notified when the driver makes buffer next_avail available (virtio 1.2 §2.7.10).
    write_used_u16(avail_event_offset(state_.size), state_.next_avail, __ATOMIC_RELAXED);
  }
  // Full barrier: avail_event is visible before we look at avail.idx again, so a buffer added
  // meanwhile is either seen here or produces a notification.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return read_avail_idx() != state_.next_avail && in_flight() < state_.size;
}

void Queue::notify_at_next_avail() {
  if (!ready() || broken_ || !state_.event_idx) return;
  write_used_u16(avail_event_offset(state_.size), read_avail_idx(), __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace carapace::virtio
