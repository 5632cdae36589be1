// The Linux x86 "zero page" (struct boot_params, Documentation/arch/x86/boot.rst) for a direct
// 64-bit boot of an ELF vmlinux: loader id, command line, initrd and the e820 map.
#pragma once

#include <asm/bootparam.h>

#include <cstdint>
#include <vector>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {

struct InitrdPlacement {
  uint64_t addr = 0;
  uint64_t size = 0;
};

struct ZeroPageInputs {
  uint64_t cmdline_addr = 0;
  uint64_t cmdline_size = 0;  // without the NUL, as the protocol's cmdline_size field counts
  InitrdPlacement initrd;     // size 0: none
  std::vector<E820Entry> e820;
};

// Builds boot_params; fails if the e820 map does not fit the table.
Result<boot_params> build_zero_page(const ZeroPageInputs& in);

}  // namespace carapace
