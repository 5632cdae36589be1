// The x86-64 guest-physical layout carapace builds. Low addresses follow the conventions Linux and
// other microVM monitors use for a direct 64-bit boot; everything above 3 GiB up to 4 GiB is an
// MMIO hole (virtio-mmio, IOAPIC, LAPIC), and RAM beyond it continues at 4 GiB.
#pragma once

#include <cstdint>

namespace carapace::layout {

inline constexpr uint64_t kPageSize = 4096;
inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kGiB = 1ull << 30;

// Boot structures, all below 1 MiB.
inline constexpr uint64_t kGdtAddr = 0x500;
inline constexpr uint64_t kIdtAddr = 0x540;            // after the 48-byte GDT (6 descriptors)
inline constexpr uint64_t kPvhStartInfoAddr = 0x6000;  // hvm_start_info + memmap
inline constexpr uint64_t kZeroPageAddr = 0x7000;      // Linux boot_params
inline constexpr uint64_t kBootStackTop = 0x8ff0;
inline constexpr uint64_t kPml4Addr = 0x9000;
inline constexpr uint64_t kPdptAddr = 0xa000;
inline constexpr uint64_t kPdAddr = 0xb000;
inline constexpr uint64_t kCmdlineAddr = 0x20000;
inline constexpr uint64_t kCmdlineMax = 0x10000;  // bytes reserved, including the NUL
// Extended BIOS data area: the MP table lives here, where Linux looks for it.
inline constexpr uint64_t kEbdaStart = 0x9fc00;
inline constexpr uint64_t kHighMemStart = 0x100000;  // 1 MiB

// The 32-bit MMIO hole.
inline constexpr uint64_t kMmioHoleStart = 3 * kGiB;
inline constexpr uint64_t kMmioHoleEnd = 4 * kGiB;
inline constexpr uint64_t kVirtioMmioBase = 0xd0000000;
inline constexpr uint64_t kIoapicAddr = 0xfec00000;
inline constexpr uint64_t kLapicAddr = 0xfee00000;

// Linux's default highest initrd address for 64-bit kernels without a setup header.
inline constexpr uint64_t kInitrdAddrMax = 0x7fffffff;

// Smallest guest the VMM accepts: boot structures, a kernel and some room to run.
inline constexpr uint64_t kMinMemBytes = 16 * kMiB;

}  // namespace carapace::layout
