// MmapRegion: an owned memory mapping, unmapped exactly once.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/base/result.h"

namespace carapace {

class MmapRegion {
 public:
  MmapRegion() = default;
  MmapRegion(const MmapRegion&) = delete;
  MmapRegion& operator=(const MmapRegion&) = delete;
  MmapRegion(MmapRegion&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        anonymous_(std::exchange(o.anonymous_, false)) {}
  MmapRegion& operator=(MmapRegion&& o) noexcept {
    if (this != &o) {
      unmap();
      addr_ = std::exchange(o.addr_, nullptr);
      size_ = std::exchange(o.size_, 0);
      anonymous_ = std::exchange(o.anonymous_, false);
    }
    return *this;
  }
  ~MmapRegion() { unmap(); }

  // Anonymous private read-write memory (guest RAM); pages are faulted in on first touch.
  static Result<MmapRegion> anonymous(size_t size, int extra_flags = 0);
  // Maps `size` bytes of `fd` from `offset`.
  static Result<MmapRegion> from_fd(int fd, size_t size, int prot, int flags, off_t offset = 0);

  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
  size_t size() const { return size_; }
  bool valid() const { return addr_ != nullptr; }
  // Anonymous memory reads as zero wherever no page was ever faulted in (snapshots skip those).
  bool anonymous_memory() const { return anonymous_; }

 private:
  MmapRegion(void* addr, size_t size, bool anonymous = false)
      : addr_(addr), size_(size), anonymous_(anonymous) {}
  void unmap();

  void* addr_ = nullptr;
  size_t size_ = 0;
  bool anonymous_ = false;
};

}  // namespace carapace
