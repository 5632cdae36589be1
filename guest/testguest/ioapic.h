// The I/O APIC at 0xfec00000: an index register and a data window.
#pragma once

#include <cstdint>

#include "guest/testguest/cpu.h"

namespace testguest {

inline constexpr uint64_t kIoapicBase = 0xfec00000;
inline constexpr uint32_t kIoapicVersionReg = 0x01;
inline constexpr uint32_t kIoapicRedirectionBase = 0x10;  // pin n: 0x10 + 2n (low), + 1 (high)
inline constexpr uint32_t kRedirMasked = 1 << 16;

inline uint32_t ioapic_read(uint32_t index) {
  mmio_write32(kIoapicBase, index);
  return mmio_read32(kIoapicBase + 0x10);
}

inline void ioapic_write(uint32_t index, uint32_t value) {
  mmio_write32(kIoapicBase, index);
  mmio_write32(kIoapicBase + 0x10, value);
}

inline uint32_t ioapic_pin_count() {
  return ((ioapic_read(kIoapicVersionReg) >> 16) & 0xff) + 1;
}

// Fixed delivery, physical destination, edge-triggered, active high (ISA defaults).
inline void ioapic_route(uint32_t pin, uint8_t vector, uint8_t apic_id) {
  ioapic_write(kIoapicRedirectionBase + 2 * pin + 1, uint32_t{apic_id} << 24);
  ioapic_write(kIoapicRedirectionBase + 2 * pin, vector);
}

inline void ioapic_mask(uint32_t pin) {
  ioapic_write(kIoapicRedirectionBase + 2 * pin, kRedirMasked);
}

}  // namespace testguest
