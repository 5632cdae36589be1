#include "common/base/mmap_region.h"

namespace carapace {

Result<MmapRegion> MmapRegion::anonymous(size_t size, int extra_flags) {
  if (size == 0) return make_error("mmap: zero-sized region");
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);
  if (p == MAP_FAILED) return sys_error("mmap anonymous " + std::to_string(size) + " bytes");
  MmapRegion region(p, size, /*anonymous=*/true);
  // A forked child (deferred teardown, helper processes) must never share or copy guest RAM.
  if (::madvise(p, size, MADV_DONTFORK) != 0) return sys_error("madvise(MADV_DONTFORK)");
  return region;
}

Result<MmapRegion> MmapRegion::from_fd(int fd, size_t size, int prot, int flags, off_t offset) {
  if (size == 0) return make_error("mmap: zero-sized region");
  void* p = ::mmap(nullptr, size, prot, flags, fd, offset);
  if (p == MAP_FAILED) return sys_error("mmap fd " + std::to_string(fd));
  return MmapRegion(p, size);
}

void MmapRegion::unmap() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

}  // namespace carapace
