#include "vmm/devices/pvpanic/pvpanic.h"

#include <algorithm>

namespace carapace {

void PvPanic::read(uint64_t offset, std::span<uint8_t> data) {
  std::fill(data.begin(), data.end(), 0);
  if (offset == 0 && !data.empty()) data[0] = kPanicked | kCrashLoaded;
}

void PvPanic::write(uint64_t offset, std::span<const uint8_t> data) {
  // Only the first byte of the one-byte register means anything; a wider write is taken by its
  // low byte, as on the ISA bus.
  if (offset != 0 || data.empty()) return;
  if (data[0] & kPanicked) fire();
}

}  // namespace carapace
