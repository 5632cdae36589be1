// IoBus: routes port-I/O and MMIO exits to the device that owns the address. The map is fixed
// before the first vCPU runs, so lookups need no lock; each device guards its own state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

class BusDevice {
 public:
  virtual ~BusDevice() = default;
  // `offset` is relative to the start of the device's range; accesses are 1, 2, 4 or 8 bytes and
  // may be unaligned (a guest chooses). Reads must fill all of `data`.
  virtual void read(uint64_t offset, std::span<uint8_t> data) = 0;
  virtual void write(uint64_t offset, std::span<const uint8_t> data) = 0;
};

class IoBus {
 public:
  // Refuses empty, wrapping or overlapping ranges.
  Status insert(std::shared_ptr<BusDevice> device, uint64_t base, uint64_t len, std::string name);

  // False when no device owns the address: the caller decides what an unclaimed access means
  // (reads of unclaimed ports return all ones, as on a PC).
  bool read(uint64_t addr, std::span<uint8_t> data) const;
  bool write(uint64_t addr, std::span<const uint8_t> data) const;

 private:
  struct Range {
    uint64_t base, len;
    std::string name;
    std::shared_ptr<BusDevice> device;
  };
  const Range* find(uint64_t addr, uint64_t len) const;
  std::vector<Range> ranges_;  // sorted by base
};

}  // namespace carapace
