// MemoryLayout: which guest-physical ranges a memory image holds and where. Regions are stored
// back to back in the image, in guest-address order, so region i starts at the sum of the sizes
// before it: the file offsets and the image size are derived, never stored (a value stored twice
// can disagree with itself; docs/security.md #20).
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/result.h"
#include "common/codec/byte_codec.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

struct MemoryLayout {
  // Bounds a corrupt file cannot exceed: real layouts have a handful of regions (RAM below and
  // above the MMIO hole), and x86-64 guest-physical addresses have at most 52 bits.
  static constexpr uint32_t kMaxRegions = 64;
  static constexpr uint64_t kMaxGuestAddress = uint64_t{1} << 52;

  std::vector<RegionSpec> regions;

  bool operator==(const MemoryLayout& o) const;

  static MemoryLayout of(const GuestMemory& memory);

  // Non-empty, page aligned, sorted, disjoint, below kMaxGuestAddress. Every other method assumes
  // a validated layout (decode() returns only validated ones).
  Status validate() const;
  // The image size: the sum of the region sizes.
  uint64_t total_size() const;
  // Where region i starts in the image.
  uint64_t file_offset(size_t i) const;

  void encode(ByteWriter& w) const;
  static Result<MemoryLayout> decode(ByteReader& r);
};

}  // namespace carapace
