// A hand-built split virtqueue in fake guest memory, playing the driver's side for tests and
// fuzzers: descriptors, the available ring, and readers for what the device put in the used ring.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "vmm/memory/guest_memory.h"
#include "vmm/virtio/queue.h"
#include "vmm/virtio/ring_layout.h"

namespace carapace::virtio::fake {

// RAM: [0, 2 MiB) and [4 MiB, 6 MiB), a gap in between.
inline constexpr uint64_t kRegion0 = 0, kRegion0Size = 2 << 20;
inline constexpr uint64_t kRegion1 = 4 << 20, kRegion1Size = 2 << 20;
inline constexpr uint64_t kDescAddr = 0x10000, kAvailAddr = 0x20000, kUsedAddr = 0x30000;
inline constexpr uint64_t kBufferBase = 0x100000;  // data buffers

inline GuestMemory make_memory() {
  auto mem = GuestMemory::create_anonymous(
      {{GuestAddress(kRegion0), kRegion0Size}, {GuestAddress(kRegion1), kRegion1Size}});
  return std::move(mem).value();
}

class TestRing {
 public:
  explicit TestRing(const GuestMemory& mem, uint16_t size = 16, uint64_t desc = kDescAddr,
                    uint64_t avail = kAvailAddr, uint64_t used = kUsedAddr)
      : mem_(&mem) {
    state.size = size;
    state.ready = true;
    state.desc_table = desc;
    state.avail_ring = avail;
    state.used_ring = used;
    state.indirect = true;
  }

  QueueState state;

  void set_desc(uint16_t i, uint64_t addr, uint32_t len, uint16_t flags = 0, uint16_t next = 0) {
    set_desc_at(state.desc_table, i, addr, len, flags, next);
  }
  void set_desc_at(uint64_t table, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags = 0,
                   uint16_t next = 0) {
    Desc d{addr, len, flags, next};
    (void)mem_->write_obj(GuestAddress(table + 16ull * i), d);
  }
  // Puts `head` in the next avail slot and bumps avail.idx.
  void publish(uint16_t head) {
    (void)mem_->write_obj(
        GuestAddress(state.avail_ring + kAvailRing + 2ull * (avail_idx_ % state.size)), head);
    set_avail_idx(static_cast<uint16_t>(avail_idx_ + 1));
  }
  void set_avail_idx(uint16_t idx) {
    avail_idx_ = idx;
    (void)mem_->write_obj(GuestAddress(state.avail_ring + kAvailIdx), idx);
  }
  uint16_t avail_idx() const { return avail_idx_; }
  void set_avail_flags(uint16_t flags) {
    (void)mem_->write_obj(GuestAddress(state.avail_ring + kAvailFlags), flags);
  }
  void set_used_event(uint16_t v) {
    (void)mem_->write_obj(GuestAddress(state.avail_ring + used_event_offset(state.size)), v);
  }
  uint16_t avail_event() const {
    return *mem_->read_obj<uint16_t>(
        GuestAddress(state.used_ring + avail_event_offset(state.size)));
  }
  uint16_t used_idx() const {
    return *mem_->read_obj<uint16_t>(GuestAddress(state.used_ring + kUsedIdx));
  }
  UsedElem used(uint16_t n) const {  // the n-th used element ever written
    return *mem_->read_obj<UsedElem>(
        GuestAddress(state.used_ring + kUsedRing + 8ull * (n % state.size)));
  }
  void fill(uint64_t addr, uint8_t byte, uint64_t len) {
    (void)mem_->fill(GuestAddress(addr), byte, len);
  }
  // Zeroes all three rings (a driver re-initialising after a reset).
  void clear() {
    fill(state.desc_table, 0, desc_table_bytes(state.size));
    fill(state.avail_ring, 0, avail_ring_bytes(state.size));
    fill(state.used_ring, 0, used_ring_bytes(state.size));
    avail_idx_ = 0;
  }
  std::vector<uint8_t> bytes(uint64_t addr, size_t len) const {
    std::vector<uint8_t> out(len);
    (void)mem_->read(GuestAddress(addr), out);
    return out;
  }

  Queue activate(uint16_t max_size = 256) const {
    return std::move(Queue::activate(*mem_, state, max_size)).value();
  }

 private:
  const GuestMemory* mem_;
  uint16_t avail_idx_ = 0;
};

}  // namespace carapace::virtio::fake
