#include "vmm/virtio/descriptor_chain.h"

#include <cstring>
#include <string>

#include "vmm/virtio/ring_layout.h"

namespace carapace::virtio {

namespace {

// A descriptor table being walked: the main one (bounded at queue activation) or an indirect one
// (bounded here, before its first entry is read).
struct Table {
  std::span<const uint8_t> bytes;
  uint32_t entries;

  Desc at(uint32_t i) const {
    Desc d;
    std::memcpy(&d, bytes.data() + uint64_t{i} * sizeof(Desc), sizeof(Desc));
    return d;
  }
};

Error chain_error(uint16_t head, const std::string& why) {
  return guest_error("virtqueue: chain at head " + std::to_string(head) + ": " + why);
}

}  // namespace

Result<DescriptorChain> DescriptorChain::parse(const GuestMemory& mem,
                                               std::span<const uint8_t> table, uint16_t queue_size,
                                               uint16_t head, bool indirect_allowed) {
  if (queue_size == 0 || table.size() < desc_table_bytes(queue_size))
    return chain_error(head, "descriptor table smaller than the queue");
  if (head >= queue_size) return chain_error(head, "head index out of range");

  DescriptorChain chain(mem, head);
  Table current{table, queue_size};
  bool in_indirect = false;
  bool seen_writable = false;
  uint64_t total = 0;
  // Hop budget: a table of N entries cannot hold a longer chain without a cycle (SECURITY 2).
  uint32_t budget = current.entries;
  uint32_t index = head;

  for (;;) {
    if (budget == 0) return chain_error(head, "longer than its table (a cycle?)");
    --budget;
    const Desc d = current.at(index);

    if (d.flags & kDescFIndirect) {
      // virtio 1.2 §2.7.5.3.1: one table per chain, never nested, never with NEXT.
      if (!indirect_allowed) return chain_error(head, "indirect descriptor not negotiated");
      if (in_indirect) return chain_error(head, "nested indirect table");
      if (d.flags & kDescFNext) return chain_error(head, "indirect descriptor with NEXT");
      if (d.len == 0 || d.len % sizeof(Desc) != 0)
        return chain_error(head, "indirect table length " + std::to_string(d.len));
      const uint32_t entries = d.len / sizeof(Desc);
      if (entries > queue_size) return chain_error(head, "indirect table longer than the queue");
      auto bytes = mem.slice(GuestAddress(d.addr), d.len);
      if (!bytes.ok()) return chain_error(head, "indirect table outside guest RAM");
      current = Table{*bytes, entries};
      in_indirect = true;
      budget = entries;
      index = 0;
      continue;
    }

    // docs/security.md #1: the whole buffer inside one region, with overflow detection.
    if (!mem.contains(GuestAddress(d.addr), d.len))
      return chain_error(head, "buffer outside guest RAM");
    const bool writable = d.flags & kDescFWrite;
    if (!writable && seen_writable)
      return chain_error(head, "readable descriptor after a writable one");
    seen_writable |= writable;
    // docs/security.md #3: the sum must fit the used ring's 32-bit length.
    if (__builtin_add_overflow(total, uint64_t{d.len}, &total) || total > UINT32_MAX)
      return chain_error(head, "total length past 4 GiB");
    if (writable)
      chain.writable_bytes_ += d.len;
    else
      chain.readable_bytes_ += d.len;
    if (d.len != 0) {
      chain.segments_.push_back(Segment{GuestAddress(d.addr), d.len});
      if (!writable) chain.first_writable_ = chain.segments_.size();
    }

    if (!(d.flags & kDescFNext)) break;
    if (d.next >= current.entries)
      return chain_error(head, "next index " + std::to_string(d.next) + " out of range");
    index = d.next;
  }
  return chain;
}

}  // namespace carapace::virtio
