// Identity-mapped page tables for the Linux 64-bit entry: the first 1 GiB with 2 MiB pages, which
// covers the kernel, the zero page and the command line. The kernel builds its own tables soon
// after.
#pragma once

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

// Writes PML4 → PDPT → PD at layout::kPml4Addr/kPdptAddr/kPdAddr and returns the CR3 value.
Result<uint64_t> write_identity_page_tables(const GuestMemory& mem);

}  // namespace carapace
