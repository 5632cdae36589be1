#include "vmm/bus/bus.h"

#include <algorithm>

namespace carapace {

Status IoBus::insert(std::shared_ptr<BusDevice> device, uint64_t base, uint64_t len,
                     std::string name) {
  uint64_t end;
  if (len == 0 || __builtin_add_overflow(base, len, &end))
    return make_error("bus: bad range for " + name);
  for (const auto& r : ranges_)
    if (base < r.base + r.len && r.base < end)
      return make_error("bus: " + name + " overlaps " + r.name);
  Range r{base, len, std::move(name), std::move(device)};
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), base,
                             [](const Range& a, uint64_t b) { return a.base < b; });
  ranges_.insert(it, std::move(r));
  return {};
}

const IoBus::Range* IoBus::find(uint64_t addr, uint64_t len) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  uint64_t off = addr - it->base;
  // The whole access must fall inside the range: a device never sees bytes past its end.
  if (off >= it->len || len > it->len - off) return nullptr;
  return &*it;
}

bool IoBus::read(uint64_t addr, std::span<uint8_t> data) const {
  const Range* r = find(addr, data.size());
  if (r == nullptr) return false;
  r->device->read(addr - r->base, data);
  return true;
}

bool IoBus::write(uint64_t addr, std::span<const uint8_t> data) const {
  const Range* r = find(addr, data.size());
  if (r == nullptr) return false;
  r->device->write(addr - r->base, data);
  return true;
}

}  // namespace carapace
