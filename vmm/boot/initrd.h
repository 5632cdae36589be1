// Places an initrd (initramfs) as high as possible in low RAM, below the highest address Linux
// accepts for it, and above the kernel image.
#pragma once

#include <cstdint>

#include "common/base/result.h"
#include "vmm/boot/zero_page.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

// Where an initrd of `size` bytes goes, or an error when it does not fit above `kernel_end`.
Result<InitrdPlacement> place_initrd(const GuestMemory& mem, uint64_t size, uint64_t kernel_end);

// Reads `path` into guest RAM at the placement chosen by place_initrd().
Result<InitrdPlacement> load_initrd(const char* path, const GuestMemory& mem, uint64_t kernel_end);

}  // namespace carapace
