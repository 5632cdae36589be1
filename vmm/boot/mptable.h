// The Intel MultiProcessor Specification 1.4 table: how a guest without ACPI learns its CPUs, its
// IOAPIC and how ISA interrupts are wired. Linux finds the floating pointer in the EBDA.
#pragma once

#include <cstdint>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

// xAPIC ids are 8 bits and 0xff is the broadcast id; the IOAPIC takes the id after the CPUs.
inline constexpr uint32_t kMpTableMaxCpus = 254;
inline constexpr uint32_t kIoapicPins = 24;

// Writes the floating pointer at layout::kEbdaStart followed by the configuration table
// (which may extend up to 1 MiB; that range is not RAM in the e820 map).
Status write_mptable(const GuestMemory& mem, uint32_t num_cpus);

}  // namespace carapace
