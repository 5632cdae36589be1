// Memory shared with virtio devices: rings and buffers, taken from the RAM after the guest image.
// The guest is identity-mapped, so an address is both the pointer the guest uses and the
// guest-physical address the device sees. Nothing is ever freed: scenarios allocate once and reuse
// (a device reset re-initialises rings in place).
#pragma once

#include <cstddef>
#include <cstdint>

#include "guest/testguest/boot_info.h"

namespace testguest {

// Finds the RAM range after the image in the memory map. Returns nullptr or why there is none.
const char* dma_init(const MemoryMap& memory);

// `size` zeroed bytes aligned to `align` (a power of two), or nullptr when the arena is exhausted.
void* dma_alloc(uint64_t size, uint64_t align = 16);

// Guest-physical address of a DMA pointer (the identity map makes this the pointer's value).
inline uint64_t phys(const volatile void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// Bytes left in the arena.
uint64_t dma_left();

// Copies `n` bytes with `rep movsb` (fast strings at CPL3; libc.cpp's memcpy is a byte loop).
inline void copy_bytes(void* dst, const void* src, uint64_t n) {
  asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

}  // namespace testguest
