// PVH boot (Xen's direct boot ABI, also used by QEMU and Firecracker): the kernel starts at its
// XEN_ELFNOTE_PHYS32_ENTRY in 32-bit protected mode with EBX pointing at hvm_start_info.
#pragma once

#include <cstdint>
#include <vector>

#include "common/abi/pvh.h"
#include "common/base/result.h"
#include "vmm/boot/zero_page.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {

// The layouts live in common/abi, shared with the test guest that reads them back.
using abi::HvmMemmapEntry;
using abi::HvmModlistEntry;
using abi::HvmStartInfo;
using abi::kHvmStartMagic;

// The start info area is one page: header, one module entry, then the memory map.
inline constexpr size_t kPvhMaxMemmapEntries =
    (4096 - sizeof(HvmStartInfo) - sizeof(HvmModlistEntry)) / sizeof(HvmMemmapEntry);

// Writes start info, the module list (the initrd, if any) and the memory map at `addr`; returns
// the address to pass in EBX.
Result<uint64_t> write_pvh_start_info(const GuestMemory& mem, GuestAddress addr,
                                      uint64_t cmdline_addr, const InitrdPlacement& initrd,
                                      const std::vector<E820Entry>& e820);

}  // namespace carapace
