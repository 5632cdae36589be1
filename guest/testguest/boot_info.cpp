#include "guest/testguest/boot_info.h"

#include <asm/bootparam.h>

#include <cstddef>

#include "common/abi/pvh.h"
#include "guest/testguest/asm_defs.h"

namespace testguest {
namespace {

using carapace::abi::HvmMemmapEntry;
using carapace::abi::HvmStartInfo;
using carapace::abi::kHvmStartMagic;

static_assert(ENTRY_LINUX64 == static_cast<uint32_t>(EntryPath::kLinux64));
static_assert(ENTRY_PVH == static_cast<uint32_t>(EntryPath::kPvh));
// The zero-page layout this guest relies on (Documentation/arch/x86/zero-page.rst).
static_assert(offsetof(boot_params, e820_entries) == 0x1e8);
static_assert(offsetof(boot_params, hdr) == 0x1f1);
static_assert(offsetof(boot_params, e820_table) == 0x2d0);
static_assert(kMaxMemRanges == E820_MAX_ENTRIES_ZEROPAGE);

void add_range(MemoryMap& map, uint64_t addr, uint64_t size, uint32_t type) {
  if (size == 0) {
    ++map.dropped_empty;
    return;
  }
  map.ranges[map.count++] = {addr, size, type};
}

// Insertion sort: at most 128 entries, usually already sorted.
void sort_ranges(MemoryMap& map) {
  for (uint32_t i = 1; i < map.count; ++i) {
    const MemRange range = map.ranges[i];
    uint32_t j = i;
    for (; j > 0 && map.ranges[j - 1].addr > range.addr; --j)
      map.ranges[j] = map.ranges[j - 1];
    if (j != i) map.was_unsorted = true;
    map.ranges[j] = range;
  }
}

void read_linux(const boot_params& params, BootInfo& info) {
  const uint64_t cmdline = params.hdr.cmd_line_ptr | (uint64_t{params.ext_cmd_line_ptr} << 32);
  info.cmdline = cmdline ? reinterpret_cast<const char*>(cmdline) : nullptr;
  if (params.e820_entries > kMaxMemRanges) {
    info.problem = "boot_params.e820_entries exceeds 128";
    return;
  }
  for (uint32_t i = 0; i < params.e820_entries; ++i) {
    const boot_e820_entry& e = params.e820_table[i];
    add_range(info.memory, e.addr, e.size, e.type);
  }
}

void read_pvh(const HvmStartInfo& start, BootInfo& info) {
  if (start.magic != kHvmStartMagic) {
    info.problem = "bad hvm_start_info magic";
    return;
  }
  info.cmdline = start.cmdline_paddr ? reinterpret_cast<const char*>(start.cmdline_paddr) : nullptr;
  if (start.version < 1) {
    info.problem = "hvm_start_info version 0 has no memory map";
    return;
  }
  if (start.memmap_entries > kMaxMemRanges) {
    info.problem = "hvm_start_info memmap has more than 128 entries";
    return;
  }
  const auto* entries = reinterpret_cast<const HvmMemmapEntry*>(start.memmap_paddr);
  for (uint32_t i = 0; i < start.memmap_entries; ++i) {
    add_range(info.memory, entries[i].addr, entries[i].size, entries[i].type);
  }
}

}  // namespace

void read_boot_info(uint32_t entry, uint64_t boot_struct, BootInfo& info) {
  info.entry = static_cast<EntryPath>(entry);
  info.boot_struct = boot_struct;
  info.cmdline = nullptr;
  info.memory.count = 0;
  info.memory.dropped_empty = 0;
  info.memory.was_unsorted = false;
  info.problem = nullptr;
  if (info.entry == EntryPath::kLinux64) {
    read_linux(*reinterpret_cast<const boot_params*>(boot_struct), info);
  } else {
    read_pvh(*reinterpret_cast<const HvmStartInfo*>(boot_struct), info);
  }
  sort_ranges(info.memory);
}

const char* mem_type_name(uint32_t type) {
  switch (type) {
    case 1:
      return "ram";
    case 2:
      return "reserved";
    case 3:
      return "acpi";
    case 4:
      return "nvs";
    case 5:
      return "unusable";
    case 6:
      return "disabled";
    case 7:
      return "pmem";
    case 12:
      return "pram";
    default:
      return nullptr;
  }
}

const char* entry_path_name(EntryPath entry) {
  return entry == EntryPath::kLinux64 ? "linux64" : "pvh";
}

}  // namespace testguest
