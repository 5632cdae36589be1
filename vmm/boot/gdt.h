// The boot GDT and the KVM segment descriptors that mirror it. One table serves both entry paths:
// the Linux 64-bit boot protocol wants CS=0x10 (64-bit code) and DS=0x18; PVH starts in 32-bit
// protected mode with a flat 32-bit code segment (0x08) and the same data segment.
#pragma once

#include "vmm/kvm/kvm_uapi.h"

#include <array>
#include <cstdint>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace::gdt {

inline constexpr uint16_t kCode32Selector = 0x08;
inline constexpr uint16_t kCode64Selector = 0x10;
inline constexpr uint16_t kDataSelector = 0x18;
inline constexpr uint16_t kTssSelector = 0x20;

// Packs base/limit/flags into an 8-byte descriptor. `flags` holds access byte bits 0-7 and the
// granularity nibble in bits 12-15, as in the Intel SDM figure 3-8.
constexpr uint64_t descriptor(uint16_t flags, uint32_t base, uint32_t limit) {
  return (uint64_t(base & 0xff000000u) << 32) | (uint64_t(flags & 0xf0ffu) << 40) |
         (uint64_t(limit & 0x000f0000u) << 32) | (uint64_t(base & 0x00ffffffu) << 16) |
         uint64_t(limit & 0xffffu);
}

// null, null-ish code32 slot, code64, data, TSS (16 bytes in long mode: two slots).
std::array<uint64_t, 6> boot_table();

// The KVM view of descriptor `entry` loaded with selector `selector`.
kvm_segment segment_from_descriptor(uint64_t entry, uint16_t selector);

// Writes the table at layout::kGdtAddr and an empty IDT at layout::kIdtAddr.
Status write_boot_tables(const GuestMemory& mem);

}  // namespace carapace::gdt
