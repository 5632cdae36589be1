#include "vmm/boot/initrd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/base/unique_fd.h"
#include "vmm/memory/layout.h"

namespace carapace {

Result<InitrdPlacement> place_initrd(const GuestMemory& mem, uint64_t size, uint64_t kernel_end) {
  if (mem.regions().empty()) return make_error("initrd: no guest memory");
  if (size == 0) return make_error("initrd: file is empty");
  // Only the first region (below the MMIO hole) is "low RAM"; Linux wants the initrd there.
  uint64_t top = std::min(mem.regions().front().end(), layout::kInitrdAddrMax + 1);
  uint64_t floor = (kernel_end + layout::kPageSize - 1) & ~(layout::kPageSize - 1);
  if (size > top || top - size < floor)
    return make_error("initrd (" + std::to_string(size >> 20) +
                      " MiB) does not fit in guest RAM above the kernel; use a larger --mem");
  uint64_t addr = (top - size) & ~(layout::kPageSize - 1);
  return InitrdPlacement{addr, size};
}

Result<InitrdPlacement> load_initrd(const char* path, const GuestMemory& mem, uint64_t kernel_end) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error(std::string("initrd: cannot open ") + path);
  struct stat st;
  if (::fstat(fd.get(), &st) < 0) return sys_error("initrd: stat");
  if (!S_ISREG(st.st_mode)) return make_error(std::string("initrd: not a regular file: ") + path);
  auto place = TRY(place_initrd(mem, static_cast<uint64_t>(st.st_size), kernel_end));
  auto dst = TRY(mem.slice(GuestAddress(place.addr), place.size));
  uint64_t done = 0;
  while (done < place.size) {
    ssize_t n = ::pread(fd.get(), dst.data() + done, place.size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("initrd: read");
    if (n == 0) return make_error("initrd: file shrank while loading");
    done += static_cast<uint64_t>(n);
  }
  return place;
}

}  // namespace carapace
