// Extending the static identity map (pagetables.S) beyond 4 GiB, from CPL3.
#pragma once

#include <cstdint>

#include "guest/testguest/boot_info.h"

namespace testguest {

// Identity-maps every RAM range above 4 GiB with 2 MiB pages, taking page directories from a static
// pool and linking them into not-yet-present PDPT entries. No TLB flush is needed: the CPU does not
// cache non-present entries. Returns nullptr, or why some RAM could not be mapped.
const char* map_ram_above_4g(const MemoryMap& memory);

// Highest address (exclusive) map_ram_above_4g can map: PDPT entry 511 is the EOI alias.
inline constexpr uint64_t kMappableEnd = 511ull << 30;

}  // namespace testguest
