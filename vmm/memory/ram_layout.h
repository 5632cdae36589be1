// Splitting guest RAM around the MMIO hole, and the e820 map that describes it.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

// Regions for `mem_bytes` of RAM: one region below the hole, and the rest from 4 GiB.
Result<std::vector<RegionSpec>> ram_regions(uint64_t mem_bytes);

enum class E820Type : uint32_t { kRam = 1, kReserved = 2 };

struct E820Entry {
  uint64_t addr;
  uint64_t size;
  E820Type type;
  bool operator==(const E820Entry&) const = default;
};

// The e820 map for RAM laid out by ram_regions(): conventional memory up to the EBDA, then RAM
// from 1 MiB; the EBDA/BIOS area is left out so the guest never allocates the MP table.
std::vector<E820Entry> build_e820(const GuestMemory& mem);

}  // namespace carapace
