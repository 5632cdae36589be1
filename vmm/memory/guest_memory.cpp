#include "vmm/memory/guest_memory.h"

#include <string>

namespace carapace {

namespace {
constexpr uint64_t kPageSize = 4096;

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Status check_layout(const std::vector<RegionSpec>& specs) {
  uint64_t prev_end = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    uint64_t end;
    if (s.size == 0) return make_error("guest memory: empty region");
    if (s.start.value % kPageSize || s.size % kPageSize)
      return make_error("guest memory: region at " + hex(s.start.value) + " not page aligned");
    if (__builtin_add_overflow(s.start.value, s.size, &end))
      return make_error("guest memory: region at " + hex(s.start.value) + " wraps");
    if (i > 0 && s.start.value < prev_end)
      return make_error("guest memory: regions overlap or are unsorted at " + hex(s.start.value));
    prev_end = end;
  }
  return {};
}
}  // namespace

Result<GuestMemory> GuestMemory::create_anonymous(const std::vector<RegionSpec>& specs,
                                                  bool transparent_hugepages) {
  TRY_STATUS(check_layout(specs));
  std::vector<GuestRegion> regions;
  for (const auto& s : specs) {
    auto map = TRY(MmapRegion::anonymous(s.size));
    if (transparent_hugepages && ::madvise(map.data(), s.size, MADV_HUGEPAGE) != 0)
      return sys_error("madvise(MADV_HUGEPAGE) on guest RAM (is THP disabled on this host?)");
    regions.push_back(GuestRegion{s.start, s.size, std::move(map)});
  }
  return GuestMemory(std::move(regions));
}

Result<GuestMemory> GuestMemory::from_regions(std::vector<GuestRegion> regions) {
  std::vector<RegionSpec> specs;
  for (const auto& r : regions) {
    if (!r.mapping.valid() || r.mapping.size() < r.size)
      return make_error("guest memory: region mapping smaller than region");
    specs.push_back({r.start, r.size});
  }
  TRY_STATUS(check_layout(specs));
  return GuestMemory(std::move(regions));
}

uint64_t GuestMemory::total_size() const {
  uint64_t total = 0;
  for (const auto& r : regions_)
    total += r.size;
  return total;
}

uint64_t GuestMemory::end_address() const {
  return regions_.empty() ? 0 : regions_.back().end();
}

const GuestRegion* GuestMemory::find(GuestAddress addr, uint64_t len) const {
  uint64_t last;
  if (__builtin_add_overflow(addr.value, len, &last)) return nullptr;
  for (const auto& r : regions_) {
    // end() cannot overflow: checked when the region was created.
    if (addr.value >= r.start.value && last <= r.end() && addr.value <= r.end()) return &r;
  }
  return nullptr;
}

bool GuestMemory::contains(GuestAddress addr, uint64_t len) const {
  return find(addr, len) != nullptr;
}

Result<std::span<uint8_t>> GuestMemory::slice(GuestAddress addr, uint64_t len) const {
  const GuestRegion* r = find(addr, len);
  if (r == nullptr)
    return make_error("guest access [" + hex(addr.value) + ", +" + hex(len) +
                      ") outside guest RAM");
  return std::span<uint8_t>(r->host_base() + (addr.value - r->start.value), len);
}

Status GuestMemory::read(GuestAddress addr, std::span<uint8_t> out) const {
  auto s = TRY(slice(addr, out.size()));
  if (!out.empty()) std::memcpy(out.data(), s.data(), out.size());
  return {};
}

Status GuestMemory::write(GuestAddress addr, std::span<const uint8_t> in) const {
  auto s = TRY(slice(addr, in.size()));
  if (!in.empty()) std::memcpy(s.data(), in.data(), in.size());
  return {};
}

Status GuestMemory::fill(GuestAddress addr, uint8_t byte, uint64_t len) const {
  auto s = TRY(slice(addr, len));
  if (len) std::memset(s.data(), byte, len);
  return {};
}

}  // namespace carapace
