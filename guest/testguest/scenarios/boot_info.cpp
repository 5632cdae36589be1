// boot-info: checks what the loader handed over (Linux zero page or PVH start info, the command
// line, the memory map) and prints the entry path, RAM total and memory map on one line. Kept
// terse: this is the scenario the VMM's startup benchmark runs, and every byte printed is a VM
// exit.
#include <asm/bootparam.h>

#include "common/abi/pvh.h"
#include "guest/testguest/boot_info.h"
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/image.h"
#include "guest/testguest/scenario.h"

namespace testguest {
namespace {

using carapace::abi::HvmStartInfo;

constexpr uint16_t kBootFlag = 0xaa55;
constexpr uint32_t kHdrS = 0x53726448;  // "HdrS"
constexpr uint8_t kLoaderUndefined = 0xff;

ScenarioResult check_linux_header(const boot_params& params) {
  if (params.hdr.boot_flag != kBootFlag) return "boot_params.hdr.boot_flag is not 0xaa55";
  if (params.hdr.header != kHdrS) return "boot_params.hdr.header is not \"HdrS\"";
  if (params.hdr.type_of_loader != kLoaderUndefined)
    return "boot_params.hdr.type_of_loader != 0xff";
  if (params.hdr.cmd_line_ptr == 0 && params.ext_cmd_line_ptr == 0) {
    return "boot_params.hdr.cmd_line_ptr is 0";
  }
  return nullptr;
}

// read_boot_info already refused a bad magic, version 0 or an oversized memory map.
ScenarioResult check_pvh_header(const HvmStartInfo& start) {
  if (start.cmdline_paddr == 0) return "hvm_start_info.cmdline_paddr is 0";
  if (start.memmap_paddr == 0) return "hvm_start_info.memmap_paddr is 0";
  return nullptr;
}

// Prints `testguest: entry=E ram=NMiB e820=A-B:type,...` (the normalized, sorted map).
void print_summary(const BootInfo& boot) {
  uint64_t ram = 0;
  for (uint32_t i = 0; i < boot.memory.count; ++i) {
    if (boot.memory.ranges[i].type == kMemRam) ram += boot.memory.ranges[i].size;
  }
  out << "testguest: entry=" << entry_path_name(boot.entry) << " ram=" << dec(ram >> 20)
      << "MiB e820=";
  for (uint32_t i = 0; i < boot.memory.count; ++i) {
    const MemRange& r = boot.memory.ranges[i];
    const char* type = mem_type_name(r.type);
    out << (i ? "," : "") << hex(r.addr) << "-" << hex(r.addr + r.size) << ":";
    if (type) {
      out << type;
    } else {
      out << "type" << dec(r.type);
    }
  }
  out << "\n";
}

// Non-overlapping entries (the map is sorted by now) of known types.
ScenarioResult check_memory_map(const MemoryMap& memory) {
  if (memory.count == 0) return "memory map is empty";
  for (uint32_t i = 0; i < memory.count; ++i) {
    const MemRange& r = memory.ranges[i];
    if (!mem_type_name(r.type)) return "memory map entry of unknown type";
    if (r.addr + r.size < r.addr) return "memory map entry wraps around";
    if (i > 0 && r.addr < memory.ranges[i - 1].addr + memory.ranges[i - 1].size) {
      return "memory map entries overlap";
    }
  }
  return nullptr;
}

// Our VMM must hand over a sorted map without empty entries. QEMU's PVH map is neither (entries
// appended out of order, an empty slot), so on the PVH path this is only a note unless the command
// line has the word `testguest.strict`.
ScenarioResult check_loader_order(const BootInfo& boot) {
  const MemoryMap& memory = boot.memory;
  if (!memory.was_unsorted && memory.dropped_empty == 0) return nullptr;
  const bool strict =
      boot.entry == EntryPath::kLinux64 || cmdline_has_word(boot.cmdline, "testguest.strict");
  out << "testguest: " << (strict ? "" : "note: ") << "the loader's memory map is "
      << (memory.was_unsorted ? "unsorted" : "sorted") << " and has " << dec(memory.dropped_empty)
      << " empty entries\n";
  if (!strict) return nullptr;
  return memory.was_unsorted ? "memory map not sorted" : "memory map has empty entries";
}

// Every byte of [start, end) must lie in RAM (possibly across adjacent RAM entries).
bool is_ram(const MemoryMap& memory, uint64_t start, uint64_t end) {
  while (start < end) {
    bool advanced = false;
    for (uint32_t i = 0; i < memory.count; ++i) {
      const MemRange& r = memory.ranges[i];
      if (r.type == kMemRam && r.addr <= start && start < r.addr + r.size) {
        start = r.addr + r.size;
        advanced = true;
        break;
      }
    }
    if (!advanced) return false;
  }
  return true;
}

}  // namespace

ScenarioResult run_boot_info(const BootInfo& boot) {
  print_summary(boot);
  ScenarioResult header =
      boot.entry == EntryPath::kLinux64
          ? check_linux_header(*reinterpret_cast<const boot_params*>(boot.boot_struct))
          : check_pvh_header(*reinterpret_cast<const HvmStartInfo*>(boot.boot_struct));
  if (header) return header;
  if (!cmdline_has_word(boot.cmdline, "testguest.run=boot-info")) {
    return "command line lacks testguest.run=boot-info";
  }
  if (ScenarioResult map = check_memory_map(boot.memory)) return map;
  if (ScenarioResult order = check_loader_order(boot)) return order;
  if (!is_ram(boot.memory, image_start(), image_end())) {
    return "the guest image is not inside RAM in the memory map";
  }
  return nullptr;
}

}  // namespace testguest
