// GuestMemory: the only door to guest bytes. Every access names a guest address and a length;
// both ends are checked (with overflow detection) against one mapped region. No function hands
// out a host pointer without the length it is valid for (docs/security.md #1).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "common/base/mmap_region.h"
#include "common/base/result.h"
#include "vmm/memory/guest_address.h"

namespace carapace {

struct GuestRegion {
  GuestAddress start;
  uint64_t size = 0;
  MmapRegion mapping;

  uint64_t end() const { return start.value + size; }  // exclusive; bounded at creation
  uint8_t* host_base() const { return mapping.data(); }
};

struct RegionSpec {
  GuestAddress start;
  uint64_t size = 0;
};

class GuestMemory {
 public:
  GuestMemory() = default;
  GuestMemory(GuestMemory&&) = default;
  GuestMemory& operator=(GuestMemory&&) = default;

  // Anonymous RAM for each region. Regions must be page aligned, non-empty, sorted and disjoint.
  // With `transparent_hugepages`, RAM is advised for 2 MiB pages: one fault per 2 MiB instead of
  // 512, which matters for guests that touch gigabytes, at the price of a coarser RSS.
  static Result<GuestMemory> create_anonymous(const std::vector<RegionSpec>& specs,
                                              bool transparent_hugepages = false);
  // Adopts already-mapped regions (file-backed RAM for snapshots, fake memory in tests).
  static Result<GuestMemory> from_regions(std::vector<GuestRegion> regions);

  const std::vector<GuestRegion>& regions() const { return regions_; }
  uint64_t total_size() const;
  // Highest guest address + 1 covered by RAM.
  uint64_t end_address() const;

  // True iff [addr, addr+len) lies inside one region (len 0 needs addr inside or at its end).
  bool contains(GuestAddress addr, uint64_t len) const;

  // Host view of [addr, addr+len), valid while this GuestMemory lives.
  Result<std::span<uint8_t>> slice(GuestAddress addr, uint64_t len) const;

  Status read(GuestAddress addr, std::span<uint8_t> out) const;
  Status write(GuestAddress addr, std::span<const uint8_t> in) const;
  Status fill(GuestAddress addr, uint8_t byte, uint64_t len) const;

  template <typename T>
  Result<T> read_obj(GuestAddress addr) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T out;
    TRY_STATUS(read(addr, {reinterpret_cast<uint8_t*>(&out), sizeof(T)}));
    return out;
  }
  template <typename T>
  Status write_obj(GuestAddress addr, const T& obj) const {
    static_assert(std::is_trivially_copyable_v<T>);
    return write(addr, {reinterpret_cast<const uint8_t*>(&obj), sizeof(T)});
  }

 private:
  explicit GuestMemory(std::vector<GuestRegion> regions) : regions_(std::move(regions)) {}
  const GuestRegion* find(GuestAddress addr, uint64_t len) const;

  std::vector<GuestRegion> regions_;
};

}  // namespace carapace
