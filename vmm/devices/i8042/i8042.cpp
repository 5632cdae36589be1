#include "vmm/devices/i8042/i8042.h"

#include <algorithm>

namespace carapace {

void I8042::read(uint64_t /*offset*/, std::span<uint8_t> data) {
  // Status 0: output buffer empty, input buffer empty, so drivers neither wait nor read data.
  std::fill(data.begin(), data.end(), 0);
}

void I8042::write(uint64_t offset, std::span<const uint8_t> data) {
  if (offset == kCommandPort - kDataPort && !data.empty() && data[0] == kCmdResetCpu) fire();
}

}  // namespace carapace
