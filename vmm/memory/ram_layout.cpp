#include "vmm/memory/ram_layout.h"

#include <algorithm>

#include "vmm/memory/layout.h"

namespace carapace {

Result<std::vector<RegionSpec>> ram_regions(uint64_t mem_bytes) {
  using namespace layout;
  if (mem_bytes < kMinMemBytes)
    return make_error("guest memory must be at least " + std::to_string(kMinMemBytes / kMiB) +
                      " MiB");
  if (mem_bytes % kPageSize) return make_error("guest memory size must be page aligned");
  std::vector<RegionSpec> out;
  uint64_t low = std::min(mem_bytes, kMmioHoleStart);
  out.push_back({GuestAddress(0), low});
  if (mem_bytes > low) out.push_back({GuestAddress(kMmioHoleEnd), mem_bytes - low});
  return out;
}

std::vector<E820Entry> build_e820(const GuestMemory& mem) {
  using namespace layout;
  std::vector<E820Entry> out;
  for (const auto& r : mem.regions()) {
    uint64_t start = r.start.value, end = r.end();
    if (start < kEbdaStart) {
      out.push_back({start, std::min(end, kEbdaStart) - start, E820Type::kRam});
      start = kHighMemStart;
    }
    if (end > start) out.push_back({start, end - start, E820Type::kRam});
  }
  return out;
}

}  // namespace carapace
