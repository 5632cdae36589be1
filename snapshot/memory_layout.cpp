#include "snapshot/memory_layout.h"

#include <string>

namespace carapace {

namespace {
constexpr uint64_t kPage = 4096;
constexpr uint64_t kRegionEncodedBytes = 16;  // start u64 + size u64

Error bad(const std::string& msg) {
  return as_invalid_input(make_error("memory layout: " + msg));
}
}  // namespace

bool MemoryLayout::operator==(const MemoryLayout& o) const {
  if (regions.size() != o.regions.size()) return false;
  for (size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].start != o.regions[i].start || regions[i].size != o.regions[i].size)
      return false;
  }
  return true;
}

MemoryLayout MemoryLayout::of(const GuestMemory& memory) {
  MemoryLayout l;
  for (const auto& r : memory.regions())
    l.regions.push_back({r.start, r.size});
  return l;
}

Status MemoryLayout::validate() const {
  if (regions.empty()) return bad("no RAM regions");
  if (regions.size() > kMaxRegions)
    return bad(std::to_string(regions.size()) + " regions, above the limit " +
               std::to_string(kMaxRegions));
  uint64_t prev_end = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    const auto& r = regions[i];
    if (r.size == 0) return bad("region " + std::to_string(i) + " is empty");
    if (r.start.value % kPage || r.size % kPage)
      return bad("region " + std::to_string(i) + " is not page aligned");
    // start < 2^52 and size < 2^52 here, so start + size cannot wrap.
    if (r.start.value >= kMaxGuestAddress || r.size > kMaxGuestAddress ||
        r.start.value + r.size > kMaxGuestAddress)
      return bad("region " + std::to_string(i) + " ends above 2^52");
    if (i > 0 && r.start.value < prev_end)
      return bad("region " + std::to_string(i) + " overlaps or is out of order");
    prev_end = r.start.value + r.size;
  }
  return {};
}

// Disjoint regions below 2^52 sum to less than 2^52: no overflow, and the total fits in off_t.
uint64_t MemoryLayout::total_size() const {
  uint64_t total = 0;
  for (const auto& r : regions)
    total += r.size;
  return total;
}

uint64_t MemoryLayout::file_offset(size_t i) const {
  uint64_t off = 0;
  for (size_t j = 0; j < i && j < regions.size(); ++j)
    off += regions[j].size;
  return off;
}

void MemoryLayout::encode(ByteWriter& w) const {
  w.u32(static_cast<uint32_t>(regions.size()));
  for (const auto& r : regions) {
    w.u64(r.start.value);
    w.u64(r.size);
  }
}

Result<MemoryLayout> MemoryLayout::decode(ByteReader& r) {
  uint32_t n = TRY(r.count("memory region count", kRegionEncodedBytes, kMaxRegions));
  MemoryLayout l;
  l.regions.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t start = TRY(r.u64("memory region start"));
    uint64_t size = TRY(r.u64("memory region size"));
    l.regions.push_back({GuestAddress(start), size});
  }
  TRY_STATUS(l.validate());
  return l;
}

}  // namespace carapace
