// The PVH boot ABI (Xen public/arch-x86/hvm/start_info.h, version 1), defined here because no
// system header carries it: the VMM writes these structures and the test guest reads them. All
// addresses are guest-physical. Header-only and freestanding-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace carapace::abi {

inline constexpr uint32_t kHvmStartMagic = 0x336ec578;

struct HvmStartInfo {
  uint32_t magic;
  uint32_t version;  // 0, or >= 1 with the memory map fields
  uint32_t flags;
  uint32_t nr_modules;
  uint64_t modlist_paddr;
  uint64_t cmdline_paddr;
  uint64_t rsdp_paddr;
  // Version 1 and later:
  uint64_t memmap_paddr;
  uint32_t memmap_entries;
  uint32_t reserved;
};
static_assert(sizeof(HvmStartInfo) == 56);
static_assert(offsetof(HvmStartInfo, memmap_paddr) == 40);

struct HvmModlistEntry {
  uint64_t paddr;
  uint64_t size;
  uint64_t cmdline_paddr;
  uint64_t reserved;
};
static_assert(sizeof(HvmModlistEntry) == 32);

struct HvmMemmapEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t type;  // same numbering as e820
  uint32_t reserved;
};
static_assert(sizeof(HvmMemmapEntry) == 24);

}  // namespace carapace::abi
