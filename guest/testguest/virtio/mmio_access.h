// MMIO accesses of an exact width, for the virtio-mmio drivers and the hostile scenario. Each one
// is a single `mov` (inline asm, so the compiler can neither split nor merge them), and each exits
// to the VMM: keep them few.
#pragma once

#include <cstdint>

namespace testguest {

inline uint8_t mmio_read8(uint64_t addr) {
  uint8_t v;
  asm volatile("movb (%1), %0" : "=q"(v) : "r"(addr) : "memory");
  return v;
}
inline uint16_t mmio_read16(uint64_t addr) {
  uint16_t v;
  asm volatile("movw (%1), %0" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
inline uint32_t mmio_read32_exact(uint64_t addr) {
  uint32_t v;
  asm volatile("movl (%1), %0" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
inline uint64_t mmio_read64(uint64_t addr) {
  uint64_t v;
  asm volatile("movq (%1), %0" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

inline void mmio_write8(uint64_t addr, uint8_t v) {
  asm volatile("movb %0, (%1)" : : "q"(v), "r"(addr) : "memory");
}
inline void mmio_write16(uint64_t addr, uint16_t v) {
  asm volatile("movw %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}
inline void mmio_write32_exact(uint64_t addr, uint32_t v) {
  asm volatile("movl %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}
inline void mmio_write64(uint64_t addr, uint64_t v) {
  asm volatile("movq %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}

// Barriers for rings shared with the device (virtio 1.2 §2.7.13). x86 is TSO: stores are not
// reordered with stores nor loads with loads, so publishing and consuming need only a compiler
// barrier; a store followed by a load of another location (avail.idx then avail_event) needs a
// full fence.
inline void virt_full_fence() {
  asm volatile("mfence" ::: "memory");
}

}  // namespace testguest
