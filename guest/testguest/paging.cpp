#include "guest/testguest/paging.h"

#include "guest/testguest/cpu.h"

extern "C" uint64_t pdpt[512];  // pagetables.S

namespace testguest {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kTableFlags = 0x27;  // present, writable, user, accessed
constexpr uint64_t kPage2M = 0xe7;      // ... dirty, 2 MiB page

// Page directories for up to 60 GiB above 4 GiB: 240 KiB of .bss, nothing in the image file.
constexpr int kPoolDirectories = 60;
alignas(4096) uint64_t directory_pool[kPoolDirectories][512];
int directories_used = 0;

bool map_gib(uint64_t gib) {
  if (pdpt[gib] & 1) return true;
  if (directories_used == kPoolDirectories) return false;
  uint64_t* directory = directory_pool[directories_used++];
  for (uint64_t i = 0; i < 512; ++i)
    directory[i] = (gib * kGiB + (i << 21)) | kPage2M;
  compiler_barrier();  // the directory must be complete before it becomes reachable
  pdpt[gib] = reinterpret_cast<uint64_t>(directory) | kTableFlags;
  return true;
}

}  // namespace

const char* map_ram_above_4g(const MemoryMap& memory) {
  for (uint32_t i = 0; i < memory.count; ++i) {
    const MemRange& range = memory.ranges[i];
    if (range.type != kMemRam || range.size == 0) continue;
    const uint64_t end = range.addr + range.size;
    if (end <= 4 * kGiB) continue;
    if (end > kMappableEnd) return "RAM above 511 GiB cannot be mapped";
    const uint64_t first = range.addr < 4 * kGiB ? 4 : range.addr / kGiB;
    for (uint64_t gib = first; gib * kGiB < end; ++gib) {
      if (!map_gib(gib)) return "RAM above 64 GiB: page-directory pool exhausted";
    }
  }
  return nullptr;
}

}  // namespace testguest
