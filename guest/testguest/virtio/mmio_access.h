// MMIO accesses of an exact width, for the virtio-mmio drivers and the hostile scenario. Each one
// is a single `mov` (inline asm, so the compiler can neither split nor merge them), and each exits
// to the VMM: keep them few.
#pragma once

#include <cstdint>

namespace testguest {

// The width is that of T: the assembler sizes the `mov` from the register the compiler picks.
template <typename T>
inline T mmio_read(uint64_t addr) {
  T v;
  asm volatile("mov (%1), %0" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

template <typename T>
inline void mmio_write(uint64_t addr, T v) {
  asm volatile("mov %0, (%1)" : : "r"(v), "r"(addr) : "memory");
}

// Barriers for rings shared with the device (virtio 1.2 §2.7.13). x86 is TSO: stores are not
// reordered with stores nor loads with loads, so publishing and consuming need only a compiler
// barrier; a store followed by a load of another location (avail.idx then avail_event) needs a
// full fence.
inline void virt_full_fence() {
  asm volatile("mfence" ::: "memory");
}

}  // namespace testguest
