// PVH boot (Xen's direct boot ABI, also used by QEMU and Firecracker): the kernel starts at its
// XEN_ELFNOTE_PHYS32_ENTRY in 32-bit protected mode with EBX pointing at hvm_start_info.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/result.h"
#include "vmm/boot/zero_page.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {

// Layouts fixed by the Xen public ABI (arch-x86/hvm/start_info.h), version 1.
struct HvmStartInfo {
  uint32_t magic;
  uint32_t version;
  uint32_t flags;
  uint32_t nr_modules;
  uint64_t modlist_paddr;
  uint64_t cmdline_paddr;
  uint64_t rsdp_paddr;
  uint64_t memmap_paddr;
  uint32_t memmap_entries;
  uint32_t reserved;
};
static_assert(sizeof(HvmStartInfo) == 56);

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
  uint32_t type;
  uint32_t reserved;
};
static_assert(sizeof(HvmMemmapEntry) == 24);

inline constexpr uint32_t kHvmStartMagic = 0x336ec578;
// The start info area is one page: header, one module entry, then the memory map.
inline constexpr size_t kPvhMaxMemmapEntries =
    (4096 - sizeof(HvmStartInfo) - sizeof(HvmModlistEntry)) / sizeof(HvmMemmapEntry);

// Writes start info, the module list (the initrd, if any) and the memory map at `addr`; returns
// the address to pass in EBX.
Result<uint64_t> write_pvh_start_info(const GuestMemory& mem, GuestAddress addr,
                                      uint64_t cmdline_addr, const InitrdPlacement& initrd,
                                      const std::vector<E820Entry>& e820);

}  // namespace carapace
