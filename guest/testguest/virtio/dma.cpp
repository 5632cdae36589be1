#include "guest/testguest/virtio/dma.h"

#include "guest/testguest/image.h"

extern "C" void* memset(void* dest, int value, size_t n);

namespace testguest {
namespace {

// The arena stays below the 32-bit MMIO hole (the virtio windows start at 0xd0000000), so every
// address fits the low halves of the queue address registers.
constexpr uint64_t kArenaLimit = 0xc0000000;

uint64_t next = 0;
uint64_t end = 0;

}  // namespace

const char* dma_init(const MemoryMap& memory) {
  if (end != 0) return nullptr;
  const uint64_t start = (image_end() + 0xfff) & ~uint64_t{0xfff};
  for (uint32_t i = 0; i < memory.count; ++i) {
    const MemRange& r = memory.ranges[i];
    if (r.type != kMemRam || start < r.addr || start >= r.addr + r.size) continue;
    next = start;
    end = r.addr + r.size < kArenaLimit ? r.addr + r.size : kArenaLimit;
    return nullptr;
  }
  return "no RAM after the guest image for virtqueues";
}

void* dma_alloc(uint64_t size, uint64_t align) {
  const uint64_t addr = (next + align - 1) & ~(align - 1);
  if (end == 0 || addr + size > end || addr + size < addr) return nullptr;
  next = addr + size;
  void* p = reinterpret_cast<void*>(addr);
  memset(p, 0, size);
  return p;
}

uint64_t dma_left() {
  return end > next ? end - next : 0;
}

}  // namespace testguest
