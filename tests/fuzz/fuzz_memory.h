// Shared fake guest memory for the fuzzers: two 64 KiB regions with a gap, mapped once and
// rewritten from each input.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/base/log.h"
#include "vmm/memory/guest_memory.h"

namespace carapace::fuzz {

inline constexpr uint64_t kRegion0 = 0, kRegion1 = 0x20000, kRegionSize = 0x10000;

inline const GuestMemory& fuzz_memory() {
  static GuestMemory* mem = [] {
    set_log_level(LogLevel::kError);  // guest mistakes are expected here by the million
    auto m = GuestMemory::create_anonymous(
        {{GuestAddress(kRegion0), kRegionSize}, {GuestAddress(kRegion1), kRegionSize}});
    return new GuestMemory(std::move(m).value());
  }();
  return *mem;
}

// Fills region 0 then region 1 from `data` (zero past its end).
inline void load_memory(const GuestMemory& mem, const uint8_t* data, size_t size) {
  for (const auto& r : mem.regions()) {
    const size_t n = size < r.size ? size : r.size;
    std::memcpy(r.host_base(), data, n);
    std::memset(r.host_base() + n, 0, r.size - n);
    data += n;
    size -= n;
  }
}

// Consumes bytes from the front of a fuzzer input.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return size_ == 0; }
  template <typename T>
  T take() {
    T v{};
    const size_t n = size_ < sizeof(T) ? size_ : sizeof(T);
    std::memcpy(&v, data_, n);
    data_ += n;
    size_ -= n;
    return v;
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace carapace::fuzz
