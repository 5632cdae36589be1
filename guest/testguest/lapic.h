// The local APIC in xAPIC (MMIO) mode, reached from CPL3 through the user-accessible identity map.
#pragma once

#include <cstdint>

#include "guest/testguest/cpu.h"

namespace testguest {

inline constexpr uint64_t kLapicBase = 0xfee00000;
inline constexpr uint32_t kMsrApicBase = 0x1b;

// Register offsets (Intel SDM vol. 3, table 11-1).
inline constexpr uint32_t kLapicId = 0x20;
inline constexpr uint32_t kLapicTpr = 0x80;
inline constexpr uint32_t kLapicEoi = 0xb0;
inline constexpr uint32_t kLapicSvr = 0xf0;
inline constexpr uint32_t kLapicIcrLow = 0x300;
inline constexpr uint32_t kLapicIcrHigh = 0x310;
inline constexpr uint32_t kLapicLvtTimer = 0x320;
inline constexpr uint32_t kLapicTimerInitial = 0x380;
inline constexpr uint32_t kLapicTimerDivide = 0x3e0;

inline constexpr uint32_t kSvrEnable = 1 << 8;
inline constexpr uint32_t kLvtMasked = 1 << 16;
inline constexpr uint32_t kLvtTimerPeriodic = 1 << 17;
inline constexpr uint32_t kIcrDeliveryPending = 1 << 12;
inline constexpr uint32_t kIcrInit = 5 << 8;
inline constexpr uint32_t kIcrStartup = 6 << 8;
inline constexpr uint32_t kIcrLevelAssert = 1 << 14;

inline uint32_t lapic_read(uint32_t reg) {
  return mmio_read32(kLapicBase + reg);
}
inline void lapic_write(uint32_t reg, uint32_t value) {
  mmio_write32(kLapicBase + reg, value);
}
inline uint8_t lapic_id() {
  return static_cast<uint8_t>(lapic_read(kLapicId) >> 24);
}

// Sends an IPI and waits (bounded) until the LAPIC has accepted it. False on timeout.
bool lapic_send_ipi(uint8_t apic_id, uint32_t icr_low);

}  // namespace testguest
