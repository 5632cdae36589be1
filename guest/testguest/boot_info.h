// What the loader handed over, in one shape for both entry paths: the entry path, the command line
// and a normalized copy of the memory map (a copy, so scenarios may overwrite the loader's data).
#pragma once

#include <cstdint>

namespace testguest {

enum class EntryPath : uint32_t { kLinux64 = 1, kPvh = 2 };

// e820 / PVH memory map types.
inline constexpr uint32_t kMemRam = 1;
inline constexpr uint32_t kMemReserved = 2;

struct MemRange {
  uint64_t addr;
  uint64_t size;
  uint32_t type;
};

// E820_MAX_ENTRIES_ZEROPAGE: the most the Linux zero page can carry.
inline constexpr uint32_t kMaxMemRanges = 128;

// The loader's map with empty entries dropped and the rest sorted by address, plus what that took:
// QEMU's PVH map, for one, is unsorted and may hold an empty entry.
struct MemoryMap {
  MemRange ranges[kMaxMemRanges];
  uint32_t count;
  uint32_t dropped_empty;  // zero-size entries the loader passed
  bool was_unsorted;       // the loader's order was not by address
};

struct BootInfo {
  EntryPath entry;
  uint64_t boot_struct;  // physical address of boot_params or hvm_start_info
  const char* cmdline;   // nullptr when the loader passed none
  MemoryMap memory;
  const char* problem;  // why the handover is unusable (bad magic, ...), or nullptr
};

// Fills `info` from the registers testguest_main received.
void read_boot_info(uint32_t entry, uint64_t boot_struct, BootInfo& info);

// Name of an e820 type, or nullptr for a type this guest does not know.
const char* mem_type_name(uint32_t type);

const char* entry_path_name(EntryPath entry);

}  // namespace testguest
