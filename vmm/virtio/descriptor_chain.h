// DescriptorChain: one request, validated whole before a device sees it (virtio 1.2 §2.7.5).
//
// parse() walks the chain once and refuses (guest error, kInvalidInput):
//   - `next` outside the table, or more hops than the table has entries, so a cycle ends
//     (docs/security.md #2);
//   - a buffer whose addr + len is not inside one RAM region or wraps (docs/security.md #1);
//   - total length past 2^32 - 1 (the used ring's len is 32 bits; docs/security.md #3);
//   - a driver-readable descriptor after a device-writable one (virtio 1.2 §2.7.4.2);
//   - a bad indirect descriptor (docs/security.md #5, virtio 1.2 §2.7.5.3): feature not
//     negotiated, table length zero or not a multiple of 16, more entries than the queue size,
//     table outside RAM, INDIRECT together with NEXT, or an indirect table inside another.
// Each descriptor is read from guest memory exactly once, so a guest rewriting the table while
// the device works cannot change what was validated.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/virtio/chain_io.h"

namespace carapace::virtio {

class DescriptorChain {
 public:
  // `table` is the queue's descriptor table (queue_size entries, bounded at activation).
  static Result<DescriptorChain> parse(const GuestMemory& mem, std::span<const uint8_t> table,
                                       uint16_t queue_size, uint16_t head, bool indirect_allowed);

  // The index to hand back to Queue::add_used().
  uint16_t head() const { return head_; }

  std::span<const Segment> readable() const { return {segments_.data(), first_writable_}; }
  std::span<const Segment> writable() const {
    return std::span<const Segment>(segments_).subspan(first_writable_);
  }
  uint32_t readable_bytes() const { return readable_bytes_; }
  uint32_t writable_bytes() const { return writable_bytes_; }

  ChainReader reader() const { return ChainReader(mem_, readable(), readable_bytes_); }
  ChainWriter writer() const { return ChainWriter(mem_, writable(), writable_bytes_); }

 private:
  DescriptorChain(const GuestMemory& mem, uint16_t head) : mem_(&mem), head_(head) {}

  const GuestMemory* mem_;
  uint16_t head_;
  // Non-empty buffers in chain order, readable ones first. At most 2 * queue_size entries (the
  // main table and one indirect table), so a chain's footprint is bounded.
  std::vector<Segment> segments_;
  size_t first_writable_ = 0;
  uint32_t readable_bytes_ = 0;
  uint32_t writable_bytes_ = 0;
};

}  // namespace carapace::virtio
